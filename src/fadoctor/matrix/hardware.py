"""NVIDIA hardware facts: the driver each CUDA runtime needs, and each GPU's compute capability."""


import re
from functools import cache
from typing import Dict, List, Optional, Pattern, Tuple

from packaging.version import Version
from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationInfo,
    field_validator,
    model_validator,
)

from fadoctor.matrix.base import DriverVersion, Entry, _driver, _version, trusted


class DriverFloor(Entry):
    cuda_major: int
    min_driver: DriverVersion

    _v = field_validator("min_driver", mode="before")(_driver)


class ToolkitDriver(Entry):
    cuda: Version  # major.minor; the GA release's driver
    min_driver: DriverVersion
    updates: Dict[str, DriverVersion] = {}  # 12.9.1 -> the driver of that update release

    _v = field_validator("cuda", mode="before")(_version)
    _d = field_validator("min_driver", mode="before")(_driver)

    @field_validator("updates", mode="before")
    @classmethod
    def _drivers(cls, value: object) -> Dict[str, DriverVersion]:
        items = value.items() if isinstance(value, dict) else ()
        return {str(k): _driver(v) for k, v in items}


class CudaDriver(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    floors: List[DriverFloor]
    toolkits: List[ToolkitDriver]


class GpuSpec(Entry):
    """A GPU model as NVIDIA names it on its compute-capability page. `pattern` (a regular
    expression, case-insensitive) finds it in a device name such as nvidia-smi prints ("NVIDIA
    H100 80GB HBM3"); by default the name itself, as whole words."""

    name: str
    pattern: Optional[str] = None
    cc: Version
    dense_bf16_tflops: Optional[float] = None
    dense_fp16_tflops: Optional[float] = None
    tflops_source: Optional[str] = None  # the vendor datasheet the peaks come from

    _v = field_validator("cc", mode="before")(_version)

    @model_validator(mode="after")
    def _sound(self, info: ValidationInfo) -> "GpuSpec":
        # Compiled here only to be checked (the twin's were when it was written), and at the first
        # match by `re`'s own cache: the shipped matrix names ~80 GPUs, a run looks up one or none.
        if not trusted(info):
            try:
                re.compile(self.regex, flags=re.IGNORECASE)
            except re.error as exc:
                raise ValueError(f"gpu {self.name!r}: pattern is not a regular expression: "
                                 f"{exc}") from exc
        peaks = self.dense_bf16_tflops is not None or self.dense_fp16_tflops is not None
        if peaks and not (self.tflops_source or "").strip():
            raise ValueError(f"gpu {self.name!r}: TFLOP/s figures need a tflops_source")
        return self

    @property
    def regex(self) -> str:
        return self.pattern if self.pattern is not None else _name_regex(self.name)

    @property
    def key_word(self) -> str:
        """The word every way of writing the name holds (the model's, for "Tesla P40")."""
        return _key_word(self.name)

    def match_length(self, device: str, lower: Optional[str] = None) -> Optional[int]:
        """How much of `device` this entry's pattern matches (None: it does not); `lower` is
        `device` lower-cased, where the caller has it."""
        if self.pattern is None and \
                _key_word(self.name).lower() not in (lower or device.lower()):
            return None  # cheap test first: resolve_gpu tries every entry
        found = re.search(self.regex, device, flags=re.IGNORECASE)
        return len(found.group(0)) if found else None


@cache
def _key_word(name: str) -> str:
    return _words(name)[0]


@cache
def _name_regex(name: str) -> str:
    words = _words(name)
    # "Tesla P40" is written "P40" as often: NVIDIA dropped the Tesla brand from Ampere on
    tesla = r"(?:Tesla[\s_-]*)?" if len(words) < len(name.split()) else ""
    joined = r"[\s_-]*".join(re.escape(w) for w in words)
    # not a source line ("train.py#L20", a range "L4-L20"): L4, L20, L40 are written like them
    return rf"(?<![\w#-]){tesla}{joined}(?![\w]|-L\d)"  # "TITAN V", "titanV"


@cache
def _words(name: str) -> Tuple[str, ...]:
    """The words a name's pattern requires, in order ("Tesla" optional before a model: P40)."""
    names = name.split()
    tesla = len(names) == 2 and names[0] == "Tesla" and re.match(r"^[A-Z]\d{2,3}$", names[1])
    return tuple(names[1:] if tesla else names)


# each table of GPUs (by identity) grouped by the lower-cased word every name of an entry holds,
# with its entries' compiled patterns; entries with a pattern of their own are tried on every name
# the entry's place in the table, it, its pattern, the lower-cased words its pattern requires
_Entry = Tuple[int, GpuSpec, Pattern[str], Tuple[str, ...]]
_Index = Tuple[List[GpuSpec], Dict[str, List[_Entry]], List[_Entry], Dict[str, Optional[GpuSpec]]]
_INDEXES: Dict[int, _Index] = {}


def _index(gpus: List[GpuSpec]) -> _Index:
    known = _INDEXES.get(id(gpus))
    if known is not None and known[0] is gpus:
        return known
    by_word: Dict[str, List[_Entry]] = {}
    always: List[_Entry] = []
    for place, g in enumerate(gpus):
        words = tuple(w.lower() for w in _words(g.name)) if g.pattern is None else ()
        entry = (place, g, re.compile(g.regex, re.IGNORECASE), words)
        if g.pattern is None:
            by_word.setdefault(_key_word(g.name).lower(), []).append(entry)
        else:
            always.append(entry)
    _INDEXES[id(gpus)] = (gpus, by_word, always, {})
    return _INDEXES[id(gpus)]


def resolve_gpu(gpus: List[GpuSpec], device: str) -> Optional[GpuSpec]:
    """The entry for a device name: the longest match wins ("RTX 4060 Ti" over "RTX 4060"); a tie
    between different compute capabilities resolves to nothing rather than to a guess. The same
    as asking each entry's match_length, in the table's order, with each key word tested once."""
    _, by_word, always, resolved = _index(gpus)
    if device in resolved:  # a log repeats its lines: each is resolved once
        return resolved[device]
    if len(resolved) > 50_000:
        resolved.clear()
    resolved[device] = found = _resolve(by_word, always, device)
    return found


def _resolve(by_word: Dict[str, List[_Entry]], always: List[_Entry], device: str
             ) -> Optional[GpuSpec]:
    lower = device.lower()
    # a pattern runs only where every word it requires is in the name (the cheap test first)
    tried = sorted([*always, *(e for word, entries in by_word.items() if word in lower
                               for e in entries if all(w in lower for w in e[3]))],
                   key=lambda e: e[0])
    scored = [(len(m.group(0)), g) for _, g, pattern, _ in tried if (m := pattern.search(device))]
    if not scored:
        return None
    best = max(n for n, _ in scored)
    top = [g for n, g in scored if n == best]
    return top[0] if len({g.cc for g in top}) == 1 else None
