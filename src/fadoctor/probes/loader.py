"""What ld.so would do with an extension, predicted from the files: library search, symbols, versions.

API (plain frozen dataclasses; nothing here is loaded, only read through `fadoctor.probes.elf`):

    LoaderContext(...)                          the process state the search depends on, injectable
    LoaderContext.for_interpreter(python, ...)  that state for a target interpreter
    preload_map(paths) -> Dict[str, str]        file name and soname -> path, for already-loaded
                                                libraries (torch's lib/, the nvidia-* wheels)
    resolve(info, context) -> Tuple[Resolution, ...]    one per DT_NEEDED entry, in order
    missing_symbols(info, scope) -> Tuple[Symbol, ...]   what `ldd -r` reports undefined in one object: every
                                                strong reference no object of the lookup scope
                                                binds, symbol versions matched as ld.so does
    unmet_versions(info, resolutions) -> Tuple[UnmetVersion, ...]
    analyze(extension, context) -> Analysis      all of the above for one extension

The search follows ld.so(8) and glibc's _dl_map_object: a library already loaded under that name
or soname wins; a name with a '/' is a path; then DT_RPATH of the object and of the objects
that loaded it, then of the executable (all skipped when the object has DT_RUNPATH);
LD_LIBRARY_PATH; DT_RUNPATH; /etc/ld.so.cache; the default directories. A candidate of another
ELF class or machine is skipped, as ld.so does. Not modelled: glibc-hwcaps subdirectories,
LD_PRELOAD, secure (setuid) mode. Symbols are looked up as for an object dlopen'ed RTLD_LOCAL:
first the global scope (`global_scope`: the interpreter, its libraries and what was loaded
RTLD_GLOBAL, see `fadoctor.probes.preload`), then the object's own load closure breadth-first;
Py*/_Py* symbols always count as the interpreter's. A versioned reference binds only to that
version, or to a definition of no version (dl-lookup.c's check_match): cudaMalloc@libcudart.so.12
is not bound by libcudart.so.13.
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field
from typing import (
    Deque,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Set,
    Tuple,
)

from fadoctor.probes.binding import Scoped as Scoped
from fadoctor.probes.binding import UnmetVersion as UnmetVersion
from fadoctor.probes.binding import _from_interpreter, _unique_scope, _unmet, bound_nowhere, library_symbols
from fadoctor.probes.binding import library_info as library_info
from fadoctor.probes.binding import missing_symbols as missing_symbols
from fadoctor.probes.binding import unmet_versions as unmet_versions
from fadoctor.probes.elf import (
    ElfError,
    ElfInfo,
    Identity,
    PathLike,
    Symbol,
    identify,
    read_elf,
)
from fadoctor.probes.ldcache import LD_CACHE, cache_index
from fadoctor.probes.relocations import relocation_order
from fadoctor.probes.resolution import How, Resolution
from fadoctor.probes.symbols import SymbolIndex, demangle

_MULTIARCH = {"EM_X86_64": "x86_64-linux-gnu", "EM_AARCH64": "aarch64-linux-gnu",
              "EM_PPC64": "powerpc64le-linux-gnu", "EM_386": "i386-linux-gnu",
              "EM_S390": "s390x-linux-gnu", "EM_RISCV": "riscv64-linux-gnu"}
_PLATFORMS = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_PPC64": "ppc64le", "EM_386": "i686",
              "EM_S390": "s390x", "EM_RISCV": "riscv64"}
_TOKEN = re.compile(r"\$(?:\{(ORIGIN|LIB|PLATFORM)\}|(ORIGIN|LIB|PLATFORM)(?![A-Za-z0-9_]))")


@dataclass(frozen=True)
class LoaderContext:
    """The state of the process that will load the extension."""

    ld_library_path: str = ""  # the raw variable: ':' or ';' separated, an empty entry is the cwd
    preloaded: Mapping[str, str] = field(default_factory=dict)  # name or soname -> loaded path
    global_scope: Tuple[Scoped, ...] = ()  # searched for symbols before the object's own closure
    ld_cache: Optional[str] = LD_CACHE  # None: no cache (a missing or corrupt file is ignored too)
    default_dirs: Optional[Tuple[str, ...]] = None  # None: the usual ones for the object's machine
    executable_rpath: Tuple[str, ...] = ()  # the interpreter's DT_RPATH, $ORIGIN expanded
    cwd: str = field(default_factory=os.getcwd)
    lib: Optional[str] = None  # what $LIB expands to; None: by machine
    platform: Optional[str] = None  # what $PLATFORM expands to; None: by machine

    @classmethod
    def for_interpreter(cls, python: PathLike, environ: Optional[Mapping[str, str]] = None,
                        preloaded: Optional[Mapping[str, str]] = None) -> LoaderContext:
        """The context of `python` started with `environ` (default: this process's)."""
        environ = os.environ if environ is None else environ
        executable = os.path.realpath(python)  # ld.so's $ORIGIN for the executable: /proc/self/exe
        try:
            info = read_elf(executable, symbols=False)
        except ElfError:
            rpath: Tuple[str, ...] = ()
        else:
            origin = os.path.dirname(executable)
            rpath = () if info.runpath else tuple(_expand(e, origin, info.identity, None, None)
                                                  for e in info.rpath)
        return cls(ld_library_path=environ.get("LD_LIBRARY_PATH", ""), preloaded=dict(preloaded or {}),
                   executable_rpath=rpath)


@dataclass(frozen=True)
class MissingLibrary:
    needed: str
    needed_by: str
    rejected: Tuple[str, ...] = ()


@dataclass(frozen=True)
class MissingSymbol:
    name: str
    version: Optional[str]
    demangled: str
    needed_by: Optional[str] = None  # the object whose reference it is; None: the extension


@dataclass(frozen=True)
class Analysis:
    """What loading one extension would do; `loadable` is the prediction for its import."""

    extension: ElfInfo
    resolutions: Tuple[Resolution, ...]  # the extension's own DT_NEEDED, in order
    libraries: Tuple[str, ...]  # searched for symbols: the global scope, then the load closure
    missing_libraries: Tuple[MissingLibrary, ...]  # anywhere in the closure not already loaded
    # Of every object of the closure not already loaded, in relocation order (the first failing
    # object's in the order its relocations refer to them): the first is the load's error.
    missing_symbols: Tuple[MissingSymbol, ...]
    unmet_versions: Tuple[UnmetVersion, ...]
    has_fatbin: bool

    @property
    def loadable(self) -> bool:
        return not (self.missing_libraries or self.missing_symbols or self.unmet_versions)


def preload_map(paths: Iterable[PathLike]) -> Dict[str, str]:
    """File name and soname -> path for libraries already in the process; unreadable ones skipped."""
    loaded: Dict[str, str] = {}
    for path in (os.fspath(p) for p in paths):
        loaded.setdefault(os.path.basename(path), path)
        try:
            soname = read_elf(path, symbols=False).soname
        except ElfError:
            continue
        if soname:
            loaded.setdefault(soname, path)
    return loaded


def default_dirs(identity: Identity) -> Tuple[str, ...]:
    """glibc's built-in directories: Debian's multiarch ones, Red Hat's lib64, then /lib, /usr/lib."""
    triplet = _MULTIARCH.get(identity.machine)
    multiarch = (f"/lib/{triplet}", f"/usr/lib/{triplet}") if triplet else ()
    lib64 = ("/lib64", "/usr/lib64") if identity.elf_class == 64 else ()
    return multiarch + lib64 + ("/lib", "/usr/lib")


def _expand(entry: str, origin: str, identity: Identity, lib: Optional[str], platform: Optional[str]) -> str:
    def token(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name == "ORIGIN":
            return origin
        if name == "PLATFORM":
            return platform or _PLATFORMS.get(identity.machine, "")
        if lib is not None:
            return lib
        triplet = _MULTIARCH.get(identity.machine)
        if triplet and os.path.isdir(f"/lib/{triplet}"):  # Debian's glibc: $LIB is lib/<triplet>
            return f"lib/{triplet}"
        return "lib64" if identity.elf_class == 64 else "lib"

    return _TOKEN.sub(token, entry) if "$" in entry else entry


class _Resolver:
    """One load in progress: the context, the parsed cache, and what is loaded so far."""

    def __init__(self, context: LoaderContext) -> None:
        self.context = context
        self.cache = cache_index(context.ld_cache)
        self.loaded: Dict[str, str] = dict(context.preloaded)

    def resolve(self, info: ElfInfo, chain: Tuple[str, ...]) -> Tuple[Resolution, ...]:
        """`chain`: the DT_RPATH directories of the objects that loaded `info`, nearest first."""
        return tuple(self.find(name, info, chain) for name in info.needed)

    def find(self, name: str, info: ElfInfo, chain: Tuple[str, ...]) -> Resolution:
        if name in self.loaded:
            return Resolution(name, self.loaded[name], How.LOADED)
        rejected: List[str] = []
        for how, path in self._candidates(name, info, chain):
            if not os.path.isfile(path):
                continue
            identity = identify(path)
            if identity == info.identity:
                return Resolution(name, path, how, tuple(rejected))
            rejected.append(path)
            if identity is None:  # not ELF: ld.so stops ("invalid ELF header", "file too short")
                break
        return Resolution(name, None, None, tuple(rejected))

    def mark_loaded(self, needed: str, info: ElfInfo) -> None:
        self.loaded.setdefault(needed, info.path)
        if info.soname:
            self.loaded.setdefault(info.soname, info.path)

    def rpath(self, info: ElfInfo) -> Tuple[str, ...]:
        """The DT_RPATH that `info` contributes, expanded; none at all when it has DT_RUNPATH."""
        return () if info.runpath else tuple(self._expand(entry, info) for entry in info.rpath)

    def _expand(self, entry: str, info: ElfInfo) -> str:
        origin = os.path.dirname(os.path.abspath(info.path))
        return _expand(entry, origin, info.identity, self.context.lib, self.context.platform)

    def _candidates(self, name: str, info: ElfInfo, chain: Tuple[str, ...]) -> Iterator[Tuple[How, str]]:
        context = self.context
        if "/" in name:
            yield How.PATH, os.path.join(context.cwd, self._expand(name, info))
            return
        # An empty directory entry is the current directory (glibc's fillin_rpath).
        if not info.runpath:
            for directory in self.rpath(info) + chain + context.executable_rpath:
                yield How.RPATH, os.path.join(context.cwd, directory, name)
        for directory in re.split("[:;]", context.ld_library_path) if context.ld_library_path else ():
            yield How.LD_LIBRARY_PATH, os.path.join(context.cwd, directory, name)
        for entry in info.runpath:
            yield How.RUNPATH, os.path.join(context.cwd, self._expand(entry, info), name)
        defaults = context.default_dirs if context.default_dirs is not None else default_dirs(info.identity)
        system = tuple(directory.rstrip("/") + "/" for directory in defaults)
        for path in self.cache.get(name, ()):
            if not (info.nodeflib and path.startswith(system)):
                yield How.LD_CACHE, path
        if not info.nodeflib:
            for directory in defaults:
                yield How.DEFAULT, os.path.join(directory, name)


def resolve(info: ElfInfo, context: Optional[LoaderContext] = None) -> Tuple[Resolution, ...]:
    """Where ld.so would find each of `info`'s DT_NEEDED entries, loading it into `context`."""
    return _Resolver(context or LoaderContext()).resolve(info, ())


class _Walk(NamedTuple):
    own: Tuple[Resolution, ...]
    closure: Tuple[Scoped, ...]  # the root, then every object it loads, breadth-first
    missing: Tuple[MissingLibrary, ...]
    unmet: Tuple[UnmetVersion, ...]
    relocated: Tuple[ElfInfo, ...]  # the objects not already loaded, in relocation order (root last)


def _walk(root: ElfInfo, resolver: _Resolver, preloaded: FrozenSet[str]) -> _Walk:
    """Breadth-first over DT_NEEDED, as _dl_map_object_deps loads them.

    Nothing is reported below an already-loaded library: it and its dependencies did load.
    """
    root_key = os.path.realpath(root.path)
    infos: Dict[str, ElfInfo] = {}  # by real path: ld.so knows a loaded file by its identity
    names: Dict[str, Set[str]] = {root_key: {root.path, *filter(None, [root.soname])}}
    edges: Dict[str, List[str]] = {}  # each object's resolved DT_NEEDED, in order
    fresh: Set[str] = {root_key}  # not loaded before: ld.so relocates these
    queue: Deque[Tuple[ElfInfo, str, Tuple[str, ...], bool]] = deque([(root, root_key, (), False)])
    own: Optional[Tuple[Resolution, ...]] = None
    missing: List[MissingLibrary] = []
    unmet: List[UnmetVersion] = []
    while queue:
        info, at, chain, loaded = queue.popleft()
        resolutions = resolver.resolve(info, chain)
        own = resolutions if own is None else own
        below = resolver.rpath(info) + chain
        deps = edges.setdefault(at, [])
        for resolution in resolutions:
            if resolution.path is None:
                if not loaded:
                    missing.append(MissingLibrary(resolution.needed, info.path, resolution.rejected))
                continue
            key = os.path.realpath(resolution.path)
            deps.append(key)
            if key not in infos and key not in names:
                infos[key] = library_info(resolution.path)
                queue.append((infos[key], key, below, loaded or key in preloaded))
                if not (loaded or key in preloaded):
                    fresh.add(key)
            names.setdefault(key, set()).update(filter(None, [resolution.needed, infos[key].soname
                                                              if key in infos else None]))
            if key in infos:
                resolver.mark_loaded(resolution.needed, infos[key])
        if not loaded:
            unmet.extend(_unmet(info, resolutions, lambda p: infos[os.path.realpath(p)].version_definitions))
    closure = (Scoped(root.path, frozenset(names.pop(root_key))),
               *(Scoped(i.path, frozenset(names[key])) for key, i in infos.items()))
    order = [key for key in _relocation_order(root_key, list(infos), edges) if key in fresh]
    relocated = (*(infos[key] for key in order), root)
    return _Walk(own or (), closure, tuple(missing), tuple(unmet), relocated)


def _relocation_order(root: str, loaded: List[str], edges: Mapping[str, List[str]]) -> List[str]:
    """The order dl_open_worker relocates the root's dependencies in: _dl_sort_maps_dfs runs a
    depth-first search over each object's DT_NEEDED from the last object loaded back to the
    first, and relocation walks the sorted list from its end: the search's post-order, every
    library before those that need it. The root is relocated after all of them."""
    seen: Set[str] = {root}
    order: List[str] = []
    for start in reversed(loaded):
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(edges.get(start, ())))]
        while stack:
            key, deps = stack[-1]
            dep = next((d for d in deps if d not in seen), None)
            if dep is None:
                order.append(key)
                stack.pop()
            else:
                seen.add(dep)
                stack.append((dep, iter(edges.get(dep, ()))))
    return order


def analyze(extension: PathLike, context: Optional[LoaderContext] = None,
            tables: Optional[Dict[str, SymbolIndex]] = None) -> Analysis:
    """Whether `extension` would load into `context`, and if not, what is missing.

    The undefined symbols of every object the load maps are bound, not only the extension's:
    ld.so relocates each one (RTLD_NOW, as Python imports), each in the same scope (the global
    one, then the extension's load closure: _dl_new_object gives a dependency its loader's
    l_searchlist), and the first unbound reference in relocation order is the import's error (`relocations`).
    """
    context = context or LoaderContext()
    info = read_elf(extension)
    preloaded = frozenset(os.path.realpath(p) for p in context.preloaded.values())
    walk = _walk(info, _Resolver(context), preloaded)
    scope = _unique_scope([*context.global_scope, *walk.closure])
    missing: List[Tuple[Symbol, Optional[str]]] = []
    for obj in walk.relocated:
        symbols = obj if obj is info else library_symbols(obj.path)
        by = None if obj is info else obj.path
        unbound = [s for s in bound_nowhere(symbols, scope, tables) if not _from_interpreter(s.name)]
        if unbound and not (missing or walk.missing or walk.unmet):
            # The load fails on this object's symbols, on the one its relocations refer to first
            # (ld.so stops at a missing library or version before relocating anything).
            rank = {name: i for i, name in enumerate(relocation_order(obj.path, {s.name for s in unbound}))}
            unbound.sort(key=lambda s: rank[s.name])
        missing.extend((s, by) for s in unbound)
    spelled = demangle({symbol.name for symbol, _ in missing})
    return Analysis(
        extension=info, resolutions=walk.own, libraries=tuple(e.path for e in scope),
        missing_libraries=walk.missing,
        missing_symbols=tuple(MissingSymbol(s.name, s.version, spelled[s.name], by) for s, by in missing),
        unmet_versions=walk.unmet, has_fatbin=".nv_fatbin" in info.sections)
