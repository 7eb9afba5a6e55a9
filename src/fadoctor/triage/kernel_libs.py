"""The attention-kernel libraries beside flash-attention (FlashMLA, FlashInfer, xFormers,
SageAttention) and the GPUs each release has kernels for: data/kernel_libraries.yaml, read from
each library's build and run-time dispatch at the cited tag or commit. A failure of one of them
on a GPU its release has no kernels for is that fact, with the release that has them or what to
use instead; a head dim its kernels refuse likewise (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.triage import data_yaml

_DATA = Path(__file__).resolve().parent.parent / "data" / "kernel_libraries.yaml"
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "data" / "kernel_libraries.yaml"
_ITEM = re.compile(r"(\d{1,2})\.(\d)([af]?)(\+PTX)?")


@dataclass(frozen=True)
class Release:
    since: str
    wheels: Optional[Tuple[str, ...]]  # None: no compiled wheels (or not verified)
    builds: Optional[Tuple[str, ...]]
    any_build: bool  # a source build compiles for the TORCH_CUDA_ARCH_LIST it is given
    cuda: Tuple[Tuple[Version, Tuple[str, ...]], ...]  # archs only wheels of that CUDA carry
    heads: Tuple[int, ...]
    max_head: Optional[int]
    refuses: Tuple[str, ...]
    where: str
    unknown: bool


@dataclass(frozen=True)
class Library:
    key: str
    display: str
    names: Tuple[str, ...]
    releases: Tuple[Release, ...]
    instead: str
    dated: bool  # releases are commits by date, not versions a report states
    dist: str  # its distribution's name, as pip installs it

    def release(self, version: Optional[Version]) -> Optional[Release]:
        """The row the stated release falls in (None: not stated, or before the table)."""
        if version is None or self.dated:
            return None
        rows = [r for r in self.releases if Version(r.since) <= version]
        return rows[-1] if rows else None

    @property
    def narrow(self) -> bool:
        """Every arch it ever built is one GPU model's own (sm_90a, sm_100f): most GPUs have no
        kernels at all."""
        items = [i for r in self.releases for i in (r.builds or r.wheels or ())]
        return bool(items) and all((m := _ITEM.fullmatch(i)) is not None and m.group(3)
                                   for i in items)


def covers(item: str, cc: Version) -> bool:
    """Whether a TORCH_CUDA_ARCH_LIST item gives these libraries working kernels on `cc`. An
    `a` item runs on that exact GPU; any other on its own major at an equal or higher minor. PTX
    of an older major does not count: their kernels are chosen by the GPU's arch at compile time
    (__CUDA_ARCH__ guards, arch-templated CUTLASS kernels), so a JIT-compiled PTX of sm_50 holds
    no sm_90 kernel (xFormers 0.0.20's `5.0+PTX ... 8.6` wheels on an H100: xformers#729)."""
    found = _ITEM.fullmatch(item)
    if found is None:
        return False
    major, minor, suffix = int(found.group(1)), int(found.group(2)), found.group(3)
    if suffix == "a":
        return (cc.major, cc.minor) == (major, minor)
    return cc.major == major and cc.minor >= minor


def _covered(items: Optional[Sequence[str]], cc: Version) -> Optional[bool]:
    return None if items is None else any(covers(i, cc) for i in items)


def wheels_cover(release: Release, cc: Version, cuda: Optional[Version]) -> Optional[bool]:
    """Whether this release's prebuilt wheels carry kernels for `cc` (None: not known; a CUDA
    build's own archs count only when the report states the CUDA)."""
    if release.unknown or release.wheels is None:
        return None
    if _covered(release.wheels, cc):
        return True
    extra = [i for floor, items in release.cuda for i in items
             if cuda is None or cuda >= floor]
    if _covered(extra, cc):
        return True if cuda is not None else None
    return False


def builds_cover(release: Release, cc: Version) -> Optional[bool]:
    if release.unknown or release.any_build:
        return None
    if _covered(release.refuses, cc):
        return False
    items = release.builds if release.builds is not None else release.wheels
    if items is None:
        return None
    extra = [i for _, more in release.cuda for i in more]
    return _covered([*items, *extra], cc)


def first_with(library: Library, cc: Version, wheels: bool,
               after: Optional[Version] = None) -> Optional[Release]:
    """The first release (after `after`) whose wheels (those of some CUDA build) or builds have
    kernels for `cc`."""
    for release in library.releases:
        if after is not None and not library.dated and Version(release.since) <= after:
            continue
        ok = wheels_cover(release, cc, Version("99")) if wheels else builds_cover(release, cc)
        if ok:
            return release
    return None


def ever_builds(library: Library, cc: Version) -> Optional[bool]:
    """Whether any release builds kernels for `cc` (None: some release's list is unknown)."""
    answers = [builds_cover(r, cc) for r in library.releases]
    if any(answers):
        return True
    return None if any(a is None for a in answers) else False


@lru_cache(maxsize=1)
def libraries() -> Dict[str, Library]:
    path = _DATA if _DATA.is_file() else _SOURCE_TREE
    if not path.is_file():
        return {}
    raw = data_yaml.load(path) or {}
    out = {}
    for key, spec in raw["libraries"].items():
        rows = tuple(Release(
            since=str(row["since"]),
            wheels=tuple(row["wheels"]) if "wheels" in row else None,
            builds=tuple(row["builds"]) if isinstance(row.get("builds"), list) else None,
            any_build=row.get("builds") == "any",
            cuda=tuple((Version(str(floor)), tuple(items))
                       for floor, items in (row.get("cuda") or {}).items()),
            heads=tuple(row.get("heads") or ()), max_head=row.get("max_head"),
            refuses=tuple(row.get("refuses") or ()), where=" ".join(str(row["where"]).split()),
            unknown=bool(row.get("unknown"))) for row in spec["releases"])
        out[key] = Library(key=key, display=spec["display"], names=tuple(spec["names"]),
                           releases=rows, instead=" ".join(spec["instead"].split()),
                           dated=spec.get("versions") == "dates", dist=spec["names"][0])
    return out


def _word(names: Sequence[str]) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(n).replace(r"\ ", r"[ _-]?")
                                                   for n in names) + r")(?![\w-])", re.I)


@lru_cache(maxsize=1)
def _patterns() -> Tuple[Tuple[Library, re.Pattern[str]], ...]:
    return tuple((lib, _word(lib.names)) for lib in libraries().values())


def named_in(line: str) -> Optional[Library]:
    """The library a line names (its package, import or source folder)."""
    for lib, pattern in _patterns():
        if pattern.search(line):
            return lib
    return None


def stated_version(text: str, library: Library) -> Optional[Version]:
    """The library's release a line states ("flashinfer: 0.1.3", "xformers==0.0.20")."""
    for name in library.names:
        found = re.search(re.escape(name).replace(r"\ ", r"[ _-]?") +
                          r"[`'\"]?\s*(?:version)?\s*(?:==|:|=|\s)\s*v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)",
                          text, re.I)
        if found:
            try:
                return Version(found.group(1))
            except InvalidVersion:
                return None
    return None


def arch_list(items: Sequence[str]) -> str:
    return ", ".join(f"sm_{i.replace('.', '').replace('+PTX', '')}" for i in items)
