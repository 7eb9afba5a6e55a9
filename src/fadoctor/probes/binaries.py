"""The static analysis of the binaries the worker located: loader, symbols, versions and kernels of
each compiled extension, as facts. Runs in fadoctor's process: it reads files, imports nothing."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence

from fadoctor.archs import arch_key
from fadoctor.facts import (
    BinaryAnalysis,
    ExtensionFile,
    Facts,
    Failure,
    FailureKind,
    Files,
    Kernels,
    MissingSymbol,
    NeededLibrary,
    Probe,
    TorchFiles,
    UnmetVersion,
)
from fadoctor.mangling import binary_string_abi, is_torch_symbol

if TYPE_CHECKING:  # the ELF readers (pyelftools) load when a binary is read, not before
    from fadoctor.probes.loader import Analysis, LoaderContext

KEPT_SYMBOLS = 50  # missing symbols kept by name; the count keeps the rest
# c10::Error's constructor takes a std::string: which one libc10 exports tells torch's C++ ABI.
_ERROR_CTOR = {
    True: "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    False: "_ZN3c105ErrorC2ENS_14SourceLocationESs",
}


def analyze_binaries(facts: Facts, extra: Sequence[str], environ: Mapping[str, str]) -> Facts:
    """`facts` with the analysis of every extension the worker located, and of `extra` ones."""
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
    targets = [*files.extensions, *(ExtensionFile(path=p) for p in extra)]
    analyses: List[BinaryAnalysis] = []
    if targets:
        from fadoctor.probes.loader import LoaderContext

        context = LoaderContext.for_interpreter(facts.target.python, environ, _preloaded(files))
        analyses = [analyze_one(t, context) for t in targets]
    binaries = Probe.success(analyses)
    timings = {**facts.timings, "binaries": round(time.monotonic() - started, 4)}
    return facts.model_copy(update={
        "files": Probe.success(files.model_copy(update={"torch": torch})),
        "binaries": binaries, "timings": timings})


def _preloaded(files: Files) -> Dict[str, str]:
    """What the process has loaded when a family is imported: torch's lib/ and the nvidia-*
    wheel libraries torch loads first."""
    paths: List[str] = []
    if files.torch is not None and files.torch.lib_dir is not None:
        lib = Path(files.torch.lib_dir)
        paths.extend(str(p) for p in sorted(lib.iterdir()) if ".so" in p.name and p.is_file())
    paths.extend(files.wheel_libraries)
    from fadoctor.probes.loader import preload_map

    return preload_map(paths)


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


def analyze_one(target: ExtensionFile, context: LoaderContext) -> BinaryAnalysis:
    from fadoctor.probes.elf import ElfError
    from fadoctor.probes.loader import analyze

    try:
        analysis = analyze(target.path, context)
    except (ElfError, OSError) as exc:
        return BinaryAnalysis(file=target, error=str(exc))
    missing = analysis.missing_symbols
    torch_names = [s.name for s in analysis.extension.undefined if is_torch_symbol(s.name)]
    return BinaryAnalysis(
        file=target,
        needed=_needed(analysis),
        missing_symbols=[MissingSymbol(name=s.name, demangled=s.demangled)
                         for s in missing[:KEPT_SYMBOLS]],
        missing_symbol_count=len(missing),
        unmet_versions=[UnmetVersion(library=u.library, version=u.version,
                                     available=_newest(u.path, u.version))
                        for u in analysis.unmet_versions],
        string_abi=binary_string_abi(torch_names),
        kernels=_kernels(target.path) if analysis.has_fatbin else None,
    )


def _needed(analysis: Analysis) -> List[NeededLibrary]:
    """The extension's own DT_NEEDED in order, then what its dependencies miss."""
    own = [NeededLibrary(name=r.needed, path=r.path, how=r.how.value if r.how else None)
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
