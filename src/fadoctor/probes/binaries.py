"""The static analysis of the binaries the worker located: loader, symbols, versions and kernels of
each compiled extension, as facts. Runs in fadoctor's process: it reads files, imports nothing."""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence

from fadoctor.archs import arch_key
from fadoctor.facts.binaries import (
    BinaryAnalysis,
    ExtensionFile,
    Kernels,
    LoadFailure,
    MissingSymbol,
    NeededLibrary,
    TorchLoad,
    UnmetVersion,
)
from fadoctor.facts.model import Facts, Failure, FailureKind, Files, Probe, TorchFiles
from fadoctor.probes.mangling import binary_string_abi, follows_from, is_torch_symbol

if TYPE_CHECKING:  # the ELF readers (pyelftools) load when a binary is read, not before
    from fadoctor.probes.loader import Analysis, LoaderContext
    from fadoctor.probes.loader import MissingSymbol as Symbol
    from fadoctor.probes.symbols import SymbolIndex
    from fadoctor.probes.torch_init import PreloadRules

KEPT_SYMBOLS = 50  # missing symbols kept by name; the count keeps the rest
# c10::Error's constructor takes a std::string: which one libc10 exports tells torch's C++ ABI.
_ERROR_CTOR = {
    True: "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    False: "_ZN3c105ErrorC2ENS_14SourceLocationESs",
}


def analyze_binaries(facts: Facts, extra: Sequence[str], environ: Mapping[str, str]) -> Facts:
    """`facts` with the analysis of every extension the worker located (the flash-attention
    families', then every other one that links torch), and of `extra` ones."""
    files = facts.files.data if facts.files is not None else None
    if files is None:
        reason = facts.files.failure.reason if facts.files and facts.files.failure else "unknown"
        failed: Probe[List[BinaryAnalysis]] = Probe.failed(Failure(
            kind=FailureKind.SKIPPED, reason=f"needs the located files, which failed: {reason}"))
        return facts.model_copy(update={"binaries": failed})
    started = time.monotonic()
    # torch's ABI from its files is needed only where torch did not say it (--static, or an
    # import that failed); the ELF readers load only when there is something to read.
    torch = files.torch if facts.torch.data is not None else _with_abi(files.torch)
    targets = _targets(files, extra)
    analyses: List[BinaryAnalysis] = []
    load: Optional[TorchLoad] = None
    if targets:
        from fadoctor.probes.preload import torch_process

        process = torch_process(facts.target.python, dict(environ),
                                files.torch.dir if files.torch else None, files.sys_path or [],
                                files.torch.cuda if files.torch else None)
        load = TorchLoad(rules=_describe(process.rules, files), preloaded=list(process.preloaded),
                         steps=list(process.steps), torch_error=process.torch_error)

        tables: Dict[str, SymbolIndex] = {}  # each library's symbols, opened once for them all
        own = _package_libraries(targets)
        try:
            analyses = [analyze_one(t, process.context, tables, own.get(t.distribution or ""))
                        for t in targets]
        finally:
            for index in tables.values():
                index.close()
    binaries = Probe.success(analyses)
    timings = {**facts.timings, "binaries": round(time.monotonic() - started, 4)}
    return facts.model_copy(update={
        "files": Probe.success(files.model_copy(update={"torch": torch})),
        "binaries": binaries, "torch_load": load, "timings": timings})


def _targets(files: Files, extra: Sequence[str]) -> List[ExtensionFile]:
    """Each file once: a family's extension, else a torch-linked one, else one named by hand."""
    seen: Dict[str, ExtensionFile] = {}
    for target in [*files.extensions, *(files.linked or []), *(ExtensionFile(path=p) for p in extra)]:
        key = os.path.realpath(target.path)
        known = seen.get(key)
        if known is None:
            seen[key] = target
        elif known.distribution is None and target.distribution is not None:
            seen[key] = known.model_copy(update={k: getattr(target, k) for k in
                                                 ("distribution", "version", "requires_torch")})
    return list(seen.values())


def _package_libraries(targets: Sequence[ExtensionFile]) -> Dict[str, Dict[str, str]]:
    """Each distribution's torch-linked libraries by file name: torchtext's _torchtext.so needs
    libtorchtext.so, which lies in torchtext/lib/, not beside it (the package loads it first)."""
    own: Dict[str, Dict[str, str]] = {}
    for target in targets:
        if target.distribution:
            own.setdefault(target.distribution, {}).setdefault(os.path.basename(target.path),
                                                               target.path)
    return own


def _describe(rules: Optional[PreloadRules], files: Files) -> Optional[str]:
    if rules is None:
        return None
    release = files.torch.version if files.torch else None
    deps = "loaded" if rules.global_deps else "not loaded"
    return (f"torch {release or '?'}/__init__.py: global deps {deps}"
            f"{', RTLD_GLOBAL' if rules.rtld_global else ''}; after loading, "
            + (f"preloads {len(rules.after_load)} CUDA libraries when {rules.marker!r} is mapped"
               if rules.marker else "preloads nothing")
            + f"; on failure, {len(rules.on_failure)}; searched as {rules.search.value}")


def _with_abi(torch: Optional[TorchFiles]) -> Optional[TorchFiles]:
    if torch is None or torch.lib_dir is None:
        return torch
    from fadoctor.probes.elf import ElfError
    from fadoctor.probes.symbols import SymbolIndex

    libc10 = os.path.join(torch.lib_dir, "libc10.so")
    try:
        with SymbolIndex(libc10) as index:
            abi = next((flag for flag, name in _ERROR_CTOR.items() if index.defines(name)), None)
    except (ElfError, OSError):
        abi = None
    return torch.model_copy(update={"cxx11_abi": abi})


def analyze_one(target: ExtensionFile, context: LoaderContext,
                tables: Optional[Dict[str, SymbolIndex]] = None,
                package: Optional[Mapping[str, str]] = None) -> BinaryAnalysis:
    from fadoctor.probes.elf import ElfError
    from fadoctor.probes.loader import analyze

    try:
        analysis = analyze(target.path, context, tables)
    except (ElfError, OSError) as exc:
        return BinaryAnalysis(file=target, error=str(exc))
    missing = analysis.missing_symbols
    needed = _needed(analysis, package or {})
    absent = {lib.name for lib in needed if lib.path is None}
    follows = [follows_from(s.name, s.version, absent) for s in missing]
    counts: Dict[str, int] = {}
    for symbol in missing:
        counts[symbol.needed_by or target.path] = counts.get(symbol.needed_by or target.path, 0) + 1
    torch_names = [s.name for s in analysis.extension.undefined if is_torch_symbol(s.name)]
    return BinaryAnalysis(
        file=target,
        needed=needed,
        missing_symbols=[MissingSymbol(name=s.name, demangled=s.demangled, version=s.version,
                                       needed_by=s.needed_by) for s in _kept(missing, follows)],
        missing_symbol_count=len(missing), consequence_count=sum(follows), missing_in=counts,
        unmet_versions=[UnmetVersion(library=u.library, version=u.version,
                                     available=_newest(u.path, u.version))
                        for u in analysis.unmet_versions],
        string_abi=binary_string_abi(torch_names),
        kernels=_kernels(target.path) if analysis.has_fatbin else None,
        first_failure=first_failure(analysis),
        python_module=_python_module(target.path),
    )


def _kept(missing: Sequence[Symbol], follows: Sequence[bool]) -> List[Symbol]:
    """The first KEPT_SYMBOLS, those no missing library explains taken first, in the loader's order."""
    causes = [i for i, follows_ in enumerate(follows) if not follows_][:KEPT_SYMBOLS]
    rest = [i for i, follows_ in enumerate(follows) if follows_][:KEPT_SYMBOLS - len(causes)]
    return [missing[i] for i in sorted(causes + rest)]


def _python_module(path: str) -> Optional[bool]:
    """Whether the file exports PyInit_<name>, the entry `import name` calls (name: the file's
    name up to its first dot); None when its symbols cannot be read."""
    from fadoctor.probes.elf import ElfError
    from fadoctor.probes.symbols import SymbolIndex

    stem = os.path.basename(path).split(".", 1)[0]
    if not stem.isidentifier():
        return False
    try:
        with SymbolIndex(path) as index:
            return index.defines(f"PyInit_{stem}")
    except (ElfError, OSError):
        return None


def first_failure(analysis: Analysis) -> Optional[LoadFailure]:
    """What ld.so stops at first: a library not found (breadth-first, as _dl_map_object_deps
    maps them), else a version need not met (_dl_check_map_versions, in load order), else an
    undefined symbol (of the first object relocated, the first its relocations refer to)."""
    path = analysis.extension.path
    if analysis.missing_libraries:
        lib = analysis.missing_libraries[0]
        return LoadFailure(kind="library", name=lib.needed,
                           needed_by=None if lib.needed_by == path else lib.needed_by,
                           message=f"{lib.needed}: cannot open shared object file: No such file or "
                                   "directory")
    if analysis.unmet_versions:
        unmet = analysis.unmet_versions[0]
        return LoadFailure(kind="version", name=unmet.version,
                           needed_by=None if unmet.needed_by == path else unmet.needed_by,
                           message=f"version `{unmet.version}' not found (required by "
                                   f"{unmet.needed_by})")
    if analysis.missing_symbols:
        symbol = analysis.missing_symbols[0]  # of the object relocated first
        version = f", version {symbol.version}" if symbol.version else ""
        return LoadFailure(kind="symbol", name=symbol.name, version=symbol.version,
                           needed_by=symbol.needed_by,
                           message=f"{symbol.needed_by or path}: undefined symbol: {symbol.name}{version}")
    return None


def _needed(analysis: Analysis, package: Mapping[str, str]) -> List[NeededLibrary]:
    """The extension's own DT_NEEDED in order, then what its dependencies miss. `package`: the
    torch-linked libraries of the extension's distribution, by file name."""
    folder = os.path.dirname(analysis.extension.path)

    def beside(name: str) -> Optional[str]:  # its package's own library, which the loader skips
        if "/" in name:
            return None
        path = os.path.join(folder, name)
        return path if os.path.isfile(path) else package.get(name)

    own = [NeededLibrary(name=r.needed, path=r.path, how=r.how.value if r.how else None,
                         beside=beside(r.needed) if r.path is None else None)
           for r in analysis.resolutions]
    names = {lib.name for lib in own if lib.path is None}
    deeper = [NeededLibrary(name=m.needed, needed_by=m.needed_by)
              for m in analysis.missing_libraries if m.needed not in names]
    return own + deeper


def _newest(path: str, version: str) -> Optional[str]:
    """The newest version of the same kind (GLIBC_, GLIBCXX_) that the library defines."""
    from fadoctor.probes.elf import ElfError, read_elf

    kind = version.rsplit("_", 1)[0] + "_"
    try:
        defined = read_elf(path, symbols=False).version_definitions or ()
    except ElfError:
        return None
    ours = [v for v in defined if v.startswith(kind) and re.fullmatch(r"[\d.]+", v[len(kind):])]
    return max(ours, key=lambda v: tuple(int(p) for p in v[len(kind):].split(".")), default=None)


def _kernels(path: str) -> Optional[Kernels]:
    from fadoctor.probes.elf import section_view
    from fadoctor.probes.fatbin import FatbinError, parse_fatbin

    try:
        with section_view(path, ".nv_fatbin") as section:
            if not section:
                return None
            fatbin = parse_fatbin(section)
    except FatbinError:
        return None
    return Kernels(sass=sorted(fatbin.sass_archs, key=arch_key),
                   ptx=sorted(fatbin.ptx_archs, key=arch_key),
                   compressed=any(e.compressed for e in fatbin.entries))
