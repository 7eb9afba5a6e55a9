"""FlashAttention-2 releases: each v2.x tag's prebuilt-wheel matrix, the torch builds its wheels
were compiled against, their GPU archs, and setup.py's rule for guessing which wheel to fetch."""


import functools
import re
from dataclasses import dataclass
from typing import Dict, List, Literal, Optional, Set

from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pydantic import ValidationInfo, field_validator, model_validator

from fadoctor.archs import ARCH
from fadoctor.matrix.base import (
    Entry,
    _cited,
    _optional_version,
    _specifier,
    _version,
    _version_text,
    minor_of,
    raise_problems,
    trusted,
)

CudaTagRule = Literal["none", "exact", "torch21_cu122", "torch21_cu12_cu122", "cu118_or_cu122",
                      "cu118_or_cu123", "major_12", "major"]
"""How setup.py's wheel guess (`CachedWheelsCommand`) turns `torch.version.cuda` (the CUDA torch
was built with, not nvcc's) into the `cu` tag of the wheel it downloads (flash_attn_facts.md §1.1):

- ``none`` (v2.0.0-v2.0.5): no guess at all; `pip install` always compiles. These tags' workflow
  named assets the legacy way, ``cu{toolkit}torch{full torch version}`` (cu113torch1.12.1).
- ``exact`` (v2.0.6-v2.2.3.post1): ``{major}{minor}`` (cu117, cu121).
- ``torch21_cu122`` (v2.2.3.post2-v2.3.1): torch 2.1 -> ``122`` whatever CUDA torch has (11.x
  included, an upstream bug); any other torch -> exact.
- ``torch21_cu12_cu122`` (v2.3.1.post1-v2.3.5): torch 2.1 with CUDA 12.x -> ``122``; else exact.
- ``cu118_or_cu122`` (v2.3.6-v2.6.0.post1): CUDA 11 -> ``118``, anything else -> ``122``.
- ``cu118_or_cu123`` (v2.6.1-v2.6.3): CUDA 11 -> ``118``, anything else -> ``123``.
- ``major_12`` (v2.7.0-v2.8.3): CUDA 11 -> ``11``, anything else (13 included) -> ``12``.
- ``major`` (v2.8.3.post1): CUDA 11 -> ``11``, 12 -> ``12``, anything else -> ``13``.
"""

# Wheel local versions: cu12torch2.8cxx11abiTRUE; legacy (v2.0.0-v2.0.5) cu113torch1.12.1.
MODERN = re.compile(r"cu(?P<cuda>\d+)torch(?P<torch>\d+\.\d+)cxx11abi(?P<abi>TRUE|FALSE)")
LEGACY = re.compile(r"cu(?P<cuda>\d+)torch(?P<torch>\d+\.\d+\.\d+)")
PYTHON_TAG = re.compile(r"cp3\d+")


@dataclass(frozen=True)
class LocalVersion:
    """A wheel's local version, parsed: `cuda` is the tag's digits ("12", "118")."""

    cuda: str
    torch: str  # "2.6"; the full version ("1.12.1") in legacy names
    cxx11_abi: Optional[bool]  # None in legacy names, which carry no ABI

    @property
    def torch_minor(self) -> str:
        return minor_of(Version(self.torch))

    @property
    def key(self) -> str:
        """The `built_against` key: the local version without its ABI part (cu12torch2.6)."""
        return f"cu{self.cuda}torch{self.torch}"


@functools.cache  # the same few hundred names recur across releases
def parse_local(text: str) -> Optional[LocalVersion]:
    modern = MODERN.fullmatch(text)
    if modern:
        return LocalVersion(modern["cuda"], modern["torch"], modern["abi"] == "TRUE")
    legacy = LEGACY.fullmatch(text)
    return LocalVersion(legacy["cuda"], legacy["torch"], None) if legacy else None


def cuda_tag_for(rule: CudaTagRule, cuda: Version, torch_minor: str) -> Optional[str]:
    """The `cu` digits setup.py asks for on a torch built with CUDA `cuda` (None: no guess)."""
    exact = f"{cuda.major}{cuda.minor}"
    if rule == "none":
        return None
    if rule == "torch21_cu122" and torch_minor == "2.1":
        return "122"
    if rule == "torch21_cu12_cu122" and torch_minor == "2.1" and cuda.major == 12:
        return "122"
    if rule in ("exact", "torch21_cu122", "torch21_cu12_cu122"):
        return exact
    if rule in ("cu118_or_cu122", "cu118_or_cu123"):
        return "118" if cuda.major == 11 else rule[-3:]
    if rule == "major_12":
        return "11" if cuda.major == 11 else "12"
    return str(cuda.major) if cuda.major in (11, 12) else "13"


def _tag_reachable(rule: CudaTagRule, tag: str, torch_minor: str) -> bool:
    """Whether setup.py under `rule` can ever ask for a wheel with this `cu` tag."""
    if rule in ("exact", "torch21_cu122", "torch21_cu12_cu122"):
        if rule == "torch21_cu122" and torch_minor == "2.1":
            return tag == "122"
        if rule == "torch21_cu12_cu122" and torch_minor == "2.1":
            return tag == "122" or tag.startswith("11")
        return len(tag) >= 3
    return tag in {"cu118_or_cu122": {"118", "122"}, "cu118_or_cu123": {"118", "123"},
                   "major_12": {"11", "12"}, "major": {"11", "12", "13"}}.get(rule, set())


class FlashAttnRelease(Entry):
    """One v2.x tag. `wheel_*` are its release workflow's axes as configured; `assets` is what
    those jobs upload to the GitHub release (presence on the page is not verified upstream)."""

    version: Version
    tag: Optional[str] = None  # None: read from the registry's sdist, the clone has no tag
    # True: no primary source for the release's wheel assets was read (a release newer than the
    # clone): `assets` is empty and no wheel of it is ever offered.
    wheels_unknown: bool = False
    wheel_torch: List[str] = []  # torch minors of the workflow's torch axis
    wheel_torch_nightlies: List[str] = []
    wheel_cuda: List[str] = []  # the CUDA toolkits the jobs installed, as written
    wheel_python: List[str] = []
    builds_on: str  # the runner image, which sets the glibc the wheels need; "unknown" if unsure
    builds_on_note: Optional[str] = None
    readme_min_torch: Version
    requires_python: SpecifierSet
    cuda_tag_rule: CudaTagRule
    # local version (cu12torch2.8cxx11abiTRUE) -> Python tags (cp39 ...)
    assets: Dict[str, List[str]] = {}
    # cu{tag}torch{minor} (the local version without its ABI part; legacy: the whole local
    # version) -> the torch CUDA variant the job installed (cu126); nightlies in built_against_torch.
    built_against: Dict[str, str] = {}
    built_against_torch: Dict[str, str] = {}  # same keys -> the exact torch (2.6.0, 2.1.0.dev...)
    # Assets the workflow names but whose jobs could not produce a wheel, and why.
    not_built: Dict[str, List[str]] = {}
    not_built_reason: Optional[str] = None
    archs: List[str]  # SASS in the wheels built with the release's newest CI toolkit
    archs_by_cuda: Dict[str, List[str]] = {}  # cu tag (cu117) -> SASS, where older nvcc built fewer
    build_archs: Dict[str, str] = {}  # a source build's default archs -> the nvcc each needs
    arch_env: Optional[str] = None  # the setup.py variable that narrows the archs of a build
    min_nvcc: str  # setup.py refuses an older nvcc
    readme_min_cuda: Optional[Version] = None  # the README's "CUDA X and above"
    platform: str
    # `source` cites the workflow and README; these cite the rest (archs are derived: say how).
    setup_source: str
    archs_source: str

    _v = field_validator("version", "readme_min_torch", mode="before")(_version)
    _o = field_validator("readme_min_cuda", mode="before")(_optional_version)
    _s = field_validator("requires_python", mode="before")(_specifier)
    _n = field_validator("min_nvcc", mode="before")(_version_text)
    _c = field_validator("setup_source", "archs_source")(_cited)

    # -- queries ------------------------------------------------------------------------------

    def local_version(self, torch: Version, torch_cuda: Version, cxx11_abi: bool) -> Optional[str]:
        """The local version setup.py's guess downloads for this torch build (None: no guess)."""
        tag = cuda_tag_for(self.cuda_tag_rule, torch_cuda, minor_of(torch))
        if tag is None:
            return None
        return f"cu{tag}torch{minor_of(torch)}cxx11abi{'TRUE' if cxx11_abi else 'FALSE'}"

    def wheel_archs(self, local: str) -> List[str]:
        """The SASS archs of one asset's wheels."""
        parsed = parse_local(local)
        return self.archs_by_cuda.get(f"cu{parsed.cuda}", self.archs) if parsed else self.archs

    def built_against_variant(self, local: str) -> Optional[str]:
        parsed = parse_local(local)
        return self.built_against.get(parsed.key) if parsed else None

    def built_against_nightly(self, local: str) -> bool:
        parsed = parse_local(local)
        torch = self.built_against_torch.get(parsed.key) if parsed else None
        return torch is not None and Version(torch).is_devrelease

    # -- what one entry must satisfy on its own -------------------------------------------------

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> "FlashAttnRelease":
        if trusted(info):
            return self
        name = f"flash-attn {self.version}"
        problems = [f"{name}: {p}" for p in (self._asset_problems() + self._build_problems()
                                              + self._arch_problems())]
        raise_problems(problems)
        return self

    def _parsed(self, keys: List[str]) -> Dict[str, LocalVersion]:
        return {k: p for k in keys if (p := parse_local(k)) is not None}

    def _asset_problems(self) -> List[str]:
        out: List[str] = []
        if not self.assets and not self.wheels_unknown:
            out.append("no assets")
        if self.assets and self.wheels_unknown:
            out.append("wheels_unknown with assets")
        every = {**self.assets, **self.not_built}
        parsed = self._parsed(list(every))
        legacy = self.cuda_tag_rule == "none"
        for key in every:
            local = parsed.get(key)
            if local is None or (local.cxx11_abi is None) != legacy:
                form = "cu{tag}torch{full}" if legacy else "cu{tag}torch{minor}cxx11abi{TRUE|FALSE}"
                out.append(f"asset {key!r} is not of the form {form}")
                continue
            if local.torch_minor not in self.wheel_torch:
                out.append(f"asset {key!r} names torch {local.torch_minor}, not in wheel_torch")
            if not legacy and not _tag_reachable(self.cuda_tag_rule, local.cuda, local.torch_minor):
                out.append(f"asset {key!r}: setup.py's {self.cuda_tag_rule} rule never asks "
                           f"for cu{local.cuda}")
        tags = {t for pythons in every.values() for t in pythons}
        wanted = {"cp" + p.replace(".", "") for p in self.wheel_python}
        bad = sorted(t for t in tags if not PYTHON_TAG.fullmatch(t))
        if bad or tags != wanted:
            out.append(f"asset Python tags {sorted(tags)} do not match wheel_python "
                       f"{self.wheel_python}")
        covered = {p.torch_minor for p in parsed.values()}
        missing = [m for m in self.wheel_torch if m not in covered]
        if missing:
            out.append(f"wheel_torch {missing} has neither assets nor not_built entries")
        if set(self.assets) & set(self.not_built):
            out.append("an asset is listed both in assets and not_built")
        if bool(self.not_built) != bool(self.not_built_reason):
            out.append("not_built and not_built_reason go together")
        return out

    def _build_problems(self) -> List[str]:
        out: List[str] = []
        keys = {p.key for p in self._parsed(list(self.assets)).values()}
        if set(self.built_against) != keys:
            out.append(f"built_against keys {sorted(self.built_against)} do not match the "
                       f"assets' {sorted(keys)}")
        if self.built_against_torch and set(self.built_against_torch) != keys:
            out.append("built_against_torch keys do not match built_against")
        for key, torch in self.built_against_torch.items():
            local = parse_local(key + ("" if self.cuda_tag_rule == "none" else "cxx11abiTRUE"))
            if local is not None and minor_of(Version(torch)) != local.torch_minor:
                out.append(f"built_against_torch {key!r} is torch {torch}")
            if Version(torch).is_devrelease and torch not in self.wheel_torch_nightlies:
                out.append(f"built against nightly torch {torch}, not in wheel_torch_nightlies")
        for key, variant in self.built_against.items():
            if not re.fullmatch(r"cu\d+", variant):
                out.append(f"built_against {key!r}: {variant!r} is not a CUDA variant (cu126)")
        return out

    def _arch_problems(self) -> List[str]:
        out: List[str] = []
        named = self.archs + [a for archs in self.archs_by_cuda.values() for a in archs] \
            + list(self.build_archs)
        out += [f"{a!r} is not an arch name (sm_90)" for a in named if not ARCH.fullmatch(a)]
        if not self.archs:
            out.append("archs is empty")
        tags = {f"cu{p.cuda}" for p in self._parsed(list(self.assets)).values()}
        out += [f"archs_by_cuda names {t}, which no asset has" for t in self.archs_by_cuda
                if t not in tags]
        for arch, nvcc in self.build_archs.items():
            try:
                _version(nvcc)
            except ValueError:
                out.append(f"build_archs {arch}: {nvcc!r} is not an nvcc version")
        if not re.fullmatch(r"[a-z]+_[a-z0-9_]+", self.platform):
            out.append(f"platform {self.platform!r} is not a wheel platform tag")
        return out


def asset_minors(release: FlashAttnRelease) -> Set[str]:
    """The torch minors a release has assets for."""
    return {p.torch_minor for k in release.assets if (p := parse_local(k)) is not None}
