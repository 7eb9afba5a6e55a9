"""The Python API of each package triage can look a name up in, by release, as generated from
upstream: flash_attn (data/flash_attn_api.yaml, tools/gen_fa_api.py at every flash-attention
tag), transformers (data/transformers_api.yaml, tools/gen_hf_api.py), Triton
(data/triton_api.yaml, tools/gen_triton_api.py), xFormers' ops (data/xformers_api.yaml,
tools/gen_xformers_api.py at every xformers tag), and the Hugging Face libraries a training stack
imports from each other (data/hf_libs_api.yaml, tools/gen_lib_api.py: huggingface_hub,
accelerate, peft, diffusers, kernels; their modules' names only, no parameters). Each is read
when a report first asks it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from fadoctor.triage import data_yaml

_DATA = Path(__file__).resolve().parent.parent / "data"
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "data"
_HF_LIBS = "Hugging Face libraries' release wheels (the latest of each minor)"
# package -> (file, its section in a file of several packages, the distribution, the source)
_TABLES: Dict[str, Tuple[str, Optional[str], str, str]] = {
    "flash_attn": ("flash_attn_api.yaml", None, "flash-attn",
                   "Dao-AILab/flash-attention at every release tag (flash_attn/)"),
    "transformers": ("transformers_api.yaml", None, "transformers", "transformers' release wheels"),
    "triton": ("triton_api.yaml", None, "triton", "Triton's release wheels"),
    "xformers": ("xformers_api.yaml", None, "xformers",
                 "facebookresearch/xformers at every release tag (xformers/ops)"),
    **{package: ("hf_libs_api.yaml", package, dist, f"{dist}: {_HF_LIBS}")
       for package, dist in (("huggingface_hub", "huggingface-hub"), ("accelerate", "accelerate"),
                             ("peft", "peft"), ("diffusers", "diffusers"),
                             ("kernels", "kernels"))},
}
# the index names of the packages these tables describe
DISTRIBUTIONS = tuple(dist for _, _, dist, _ in _TABLES.values())
# the import names a report's `cannot import name ... from 'X'` may name (a regex alternation)
PACKAGES = "|".join(sorted(_TABLES, key=len, reverse=True))


@dataclass(frozen=True)
class Api:
    """One package's API by release: each key with the indexes of the releases that have it."""

    dist: str  # the distribution to pin
    source: str  # where the data comes from
    tags: Tuple[str, ...]
    names: Dict[str, Tuple[int, ...]]
    modules: Dict[str, Tuple[int, ...]]
    parameters: Dict[str, Dict[str, Tuple[int, ...]]]
    required: Dict[str, Dict[str, Tuple[int, ...]]]
    environment: Dict[str, Tuple[int, ...]]  # the variables setup.py reads (flash_attn only)
    # how many values each function returns, by release (flash_attn only)
    returns: Dict[str, Dict[str, Tuple[int, ...]]]
    minors: bool = False  # one tag per minor (its latest release), not every release

    def version(self, index: int) -> str:
        return self.tags[index].lstrip("v")

    def removed_in(self, index: int) -> str:
        """The release that first lacks a name, `index` being the first tag without it: a
        table of minors (the latest release of each) knows only the minor."""
        version = self.version(index)
        return ".".join(version.split(".")[:2]) if self.minors else version

    def functions(self, name: str) -> List[str]:
        """Every module:function key for a bare function name."""
        return [key for key in self.parameters if key.rsplit(":", 1)[1] == name]


def _indexes(runs: str) -> Tuple[int, ...]:
    out: List[int] = []
    for run in str(runs).split(","):
        low, _, high = run.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return tuple(out)


@cache  # one per data file (five): a smaller cache reloaded them in turn
def _file(name: str) -> Dict[str, object]:
    path = _DATA / name if (_DATA / name).is_file() else _SOURCE_TREE / name
    loaded: Dict[str, object] = data_yaml.load(path)
    return loaded


@lru_cache(maxsize=len(_TABLES))
def api(package: str) -> Api:
    """One package's API (a key of _TABLES), read when a report first needs it."""
    name, section, dist, source = _TABLES[package]
    raw: Dict[str, Any] = _file(name)[section] if section else _file(name)  # type: ignore[assignment]

    def table(key: str) -> Dict[str, Dict[str, Tuple[int, ...]]]:
        return {k: {p: _indexes(v) for p, v in ps.items()} for k, ps in (raw.get(key) or {}).items()}
    return Api(dist, source,
               tuple(raw["tags"]), {k: _indexes(v) for k, v in raw["names"].items()},
               {k: _indexes(v) for k, v in raw["modules"].items()},
               table("parameters"), table("required"),
               {k: _indexes(v) for k, v in (raw.get("environment") or {}).items()},
               table("returns"), minors=section is not None)
