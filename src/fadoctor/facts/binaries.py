"""Facts from reading the examined environment's binaries as files (`probes/binaries.py`): what
`import torch` loads, and, per extension, the libraries, symbols and versions the loader needs and
the GPU code it carries."""

from typing import Dict, List, Literal, Optional

from fadoctor.facts.family import Family
from fadoctor.facts.frozen import Frozen


class ExtensionFile(Frozen):
    family: Optional[Family] = None  # None: named with --extension, or found linking torch
    module: Optional[str] = None
    path: str
    distribution: Optional[str] = None  # the distribution whose RECORD lists it
    version: Optional[str] = None  # that distribution's version
    requires_torch: Optional[str] = None  # its Requires-Dist on torch: "==2.4.0", ">=2.10"


class TorchLoad(Frozen):
    """What `import torch` loads before any extension, played from its own loading code."""

    rules: Optional[str] = None  # the loading code recognised; None: not recognised
    preloaded: List[str] = []  # libraries torch preloads from sys.path (nvidia-* wheels), in order
    steps: List[str] = []  # what the model did, in order
    torch_error: Optional[str] = None  # what `import torch` itself would raise


class LoadFailure(Frozen):
    """The first thing the dynamic loader stops at, in its order: a library, a version, a symbol."""

    kind: Literal["library", "version", "symbol"]
    name: str  # libcudart.so.12, GLIBC_2.32, _ZN3c10...
    needed_by: Optional[str] = None  # the object that needs it, when not the extension itself
    version: Optional[str] = None  # the symbol's version: cudaMalloc@libcudart.so.12
    message: str  # as ld.so words it


class NeededLibrary(Frozen):
    name: str  # the DT_NEEDED entry
    path: Optional[str] = None  # where the loader would find it; None: it would not
    how: Optional[str] = None  # rpath, ld_library_path, runpath, loaded, ld_cache, default, path
    needed_by: Optional[str] = None  # set for a library a dependency needs, not the binary itself
    # not found, but a file of that name lies in the binary's folder or is a library of its
    # distribution (torchtext/lib/libtorchtext.so): the package loads it first
    beside: Optional[str] = None


class MissingSymbol(Frozen):
    name: str
    demangled: Optional[str] = None
    version: Optional[str] = None  # the version the reference is bound to: libcudart.so.12
    needed_by: Optional[str] = None  # the library of the load whose reference it is; None: the binary's


class UnmetVersion(Frozen):
    library: str  # libc.so.6
    version: str  # GLIBC_2.32
    available: Optional[str] = None  # the newest of that kind the resolved library defines


class Kernels(Frozen):
    """The GPU code in a binary's CUDA fat binary."""

    sass: List[str] = []  # sm_80, sm_90a, ...
    ptx: List[str] = []  # compute_90, ...
    compressed: bool = False


class BinaryAnalysis(Frozen):
    """What reading one extension as a file predicts about importing it and running it."""

    file: ExtensionFile
    needed: List[NeededLibrary] = []
    # The first ones in the loader's order (the objects it brings, deepest first, then the binary
    # itself), those no missing library explains kept first.
    missing_symbols: List[MissingSymbol] = []
    missing_symbol_count: int = 0  # all of them, of every object the load relocates
    # How many are consequences of a missing library (checks.load_cause); None: unknown (older facts).
    consequence_count: Optional[int] = None
    # Each object that misses symbols -> how many (the binary's own path too); None: older facts.
    missing_in: Optional[Dict[str, int]] = None
    unmet_versions: List[UnmetVersion] = []
    string_abi: Optional[int] = None  # C++11 ABI of the std::string its undefined symbols use
    kernels: Optional[Kernels] = None  # None: no .nv_fatbin section
    error: Optional[str] = None  # the file could not be analysed
    first_failure: Optional[LoadFailure] = None  # None: it loads (or could not be analysed)
    python_module: Optional[bool] = None  # exports PyInit_<its name>: `import` loads it

    @property
    def predicts_import_failure(self) -> bool:
        return bool(self.error is None and (
            any(lib.path is None for lib in self.needed) or self.missing_symbol_count
            or self.unmet_versions))
