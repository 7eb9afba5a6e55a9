"""Symbol binding as ld.so does it, over files that are read, never loaded: which undefined
symbols of an object no object of its lookup scope binds (symbol versions matched as dl-lookup.c's
check_match does), and which version needs the library found for them does not define.
`fadoctor.probes.loader` re-exports this API; it owns the library search."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from fadoctor.probes.elf import ElfError, ElfInfo, PathLike, Symbol, read_elf
from fadoctor.probes.resolution import Resolution
from fadoctor.probes.symbols import SymbolIndex


@dataclass(frozen=True)
class Scoped:
    """One object of a symbol lookup scope: its file and the names ld.so knows it by (as it was
    requested, and its soname), which a version need's file name is matched against."""

    path: str
    names: FrozenSet[str] = frozenset()


@dataclass(frozen=True)
class UnmetVersion:
    needed_by: str  # the object with the version need
    library: str  # as named in the need: "libc.so.6"
    version: str  # "GLIBC_2.32"
    path: str  # the file found for `library`, which does not define `version`


def library_info(path: PathLike) -> ElfInfo:
    """`read_elf(path, symbols=False)`, memoized per file state: every extension of a family
    loads the same torch, CUDA and C++ runtime libraries, and pyelftools costs ms per file."""
    try:
        status = os.stat(path)
    except OSError as exc:
        raise ElfError(f"{os.fspath(path)}: {exc.strerror or exc}") from exc
    return _library_info(os.fspath(path), (status.st_ino, status.st_mtime_ns, status.st_size))


@lru_cache(maxsize=256)
def _library_info(path: str, stamp: Tuple[int, int, int]) -> ElfInfo:
    return read_elf(path, symbols=False)


def library_symbols(path: PathLike) -> ElfInfo:
    """`read_elf(path)` with its undefined symbols, memoized as `library_info` is: a library an
    extension brings is bound once for every extension that loads it."""
    try:
        status = os.stat(path)
    except OSError as exc:
        raise ElfError(f"{os.fspath(path)}: {exc.strerror or exc}") from exc
    return _library_symbols(os.fspath(path), (status.st_ino, status.st_mtime_ns, status.st_size))


@lru_cache(maxsize=64)
def _library_symbols(path: str, stamp: Tuple[int, int, int]) -> ElfInfo:
    return read_elf(path)


def _from_interpreter(name: str) -> bool:
    return name.startswith(("Py", "_Py"))


def _scoped(entry: Scoped | PathLike) -> Scoped:
    if isinstance(entry, Scoped):
        return entry
    path = os.fspath(entry)
    try:
        soname = library_info(path).soname
    except ElfError:
        soname = None
    return Scoped(path, frozenset(n for n in (os.path.basename(path), soname) if n))


def missing_symbols(info: ElfInfo, scope: Sequence[Scoped | PathLike],
                    tables: Optional[Dict[str, SymbolIndex]] = None) -> Tuple[Symbol, ...]:
    """The undefined strong symbols of `info` that no object of `scope` binds: `ldd -r`'s list.

    The lookup does not end at the file a version is needed from: glibc 2.34 moved libpthread's
    symbols into libc, and binaries that need write@GLIBC_2.2.5 from libpthread.so.0 still load.
    `tables`: symbol indices kept open across calls (by path; the caller closes them).
    """
    return bound_nowhere(info, _unique_scope([_scoped(entry) for entry in scope]), tables)


def bound_nowhere(info: ElfInfo, entries: Sequence[Scoped],
                  tables: Optional[Dict[str, SymbolIndex]] = None) -> Tuple[Symbol, ...]:
    """`missing_symbols` over a scope already without duplicates (`_unique_scope`'s): the loader
    model binds every object of a load in one scope, made once."""
    with ExitStack() as stack:
        def index(path: str) -> SymbolIndex:
            if tables is None:
                return stack.enter_context(SymbolIndex(path))
            if path not in tables:
                tables[path] = SymbolIndex(path)
            return tables[path]

        indices = [index(entry.path) for entry in entries]
        return tuple(symbol for symbol in info.undefined if not _binds_somewhere(symbol, indices))


def _binds_somewhere(symbol: Symbol, indices: List[SymbolIndex]) -> bool:
    """Whether some object binds `symbol`. The one that does moves to the front: an extension's
    symbols come in runs from one library, and a miss costs a hash and a bloom-filter probe."""
    for position, index in enumerate(indices):
        if index.binds(symbol.name, symbol.version):
            if position:
                indices.insert(0, indices.pop(position))
            return True
    return False


def _unique_scope(entries: Iterable[Scoped]) -> List[Scoped]:
    """`entries` without a second copy of one file (its names merged into the first), in order."""
    unique: Dict[str, Scoped] = {}
    for entry in entries:
        key = os.path.realpath(entry.path)
        seen = unique.get(key)
        unique[key] = entry if seen is None else Scoped(seen.path, seen.names | entry.names)
    return list(unique.values())


def unmet_versions(info: ElfInfo, resolutions: Sequence[Resolution]) -> Tuple[UnmetVersion, ...]:
    """The version needs of `info` that the library found for them does not define."""
    return _unmet(info, resolutions, lambda path: library_info(path).version_definitions)


def _unmet(info: ElfInfo, resolutions: Sequence[Resolution],
           definitions: Callable[[str], Optional[Tuple[str, ...]]]) -> Tuple[UnmetVersion, ...]:
    found = {r.needed: r.path for r in resolutions if r.path is not None}
    unmet: List[UnmetVersion] = []
    for need in info.version_needs:
        path = found.get(need.library)
        if path is None:
            continue  # a library that is not found is reported as missing, not version by version
        # An unversioned library meets no need: dl-version.c only warns, but binding a versioned
        # reference into it fails an assertion in dl-lookup.c's check_match and the process dies.
        provided = definitions(path) or ()
        unmet.extend(UnmetVersion(info.path, need.library, version, path)
                     for version in need.versions if version not in provided)
    return tuple(unmet)
