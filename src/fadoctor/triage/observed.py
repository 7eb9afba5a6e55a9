"""What the pasted text states, each value with the line it came from: the parsers' common output,
independent of the facts model (the bridge turns it into partial facts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

from fadoctor.triage.text import Quote

# The facts a report can state. A parser sets them through `Observed.state`, which keeps the value
# from the most reliable kind of input (a tool's own output over prose).
TORCH, TORCH_CUDA, TORCH_HIP, TORCH_ABI, TORCH_NIGHTLY, TORCH_CONDA = (
    "torch", "torch_cuda", "torch_hip", "torch_cxx11_abi", "torch_nightly", "torch_conda")
PYTHON, OS, GLIBC, MACHINE, KERNEL = "python", "os", "glibc", "machine", "kernel"
DRIVER, DRIVER_CUDA, NVCC, CUDA, GCC, ROCM = (
    "driver", "driver_cuda", "nvcc", "cuda", "gcc", "rocm")
MEMORY_GIB, CPUS, CUDA_AVAILABLE = "memory_gib", "cpus", "cuda_available"
GPU_ARCH_FAMILY, GPU_CC, AMD_ARCH = "gpu_arch_family", "gpu_cc", "amd_arch"

# How much a kind of input is trusted for a value: the tool that knows it best wins.
TOOL, LISTING, PROSE = 3, 2, 1


@dataclass(frozen=True)
class Stated:
    value: str
    quote: Quote
    weight: int = PROSE


@dataclass(frozen=True)
class Gpu:
    """A GPU the text names; `cc` from the matrix's GPU table or the text itself."""

    name: str
    quote: Quote
    cc: Optional[str] = None
    vendor: str = "nvidia"  # or "amd"


@dataclass(frozen=True)
class Raised:
    """An error line: an exception (`ImportError: ...`), a tool's error, a wrapper's warning."""

    kind: str  # the exception type, or "error" / "warning" / "log"
    message: str
    quote: Quote
    index: int  # the piece of the text it is on
    in_build: bool = False  # inside a pip / setup.py / ninja build log
    frames: List[str] = field(default_factory=list)  # the traceback's file paths, oldest first


@dataclass
class Observed:
    values: Dict[str, Stated] = field(default_factory=dict)
    packages: Dict[str, Stated] = field(default_factory=dict)  # canonical name -> version
    gpus: List[Gpu] = field(default_factory=list)
    wheels: List[Stated] = field(default_factory=list)  # wheel file names mentioned
    libraries: List[Stated] = field(default_factory=list)  # shared libraries shown present
    raised: List[Raised] = field(default_factory=list)
    marks: Dict[str, Stated] = field(default_factory=dict)  # build/log markers (see errors.py)
    kinds: Set[str] = field(default_factory=set)  # which kinds of input were recognised
    rows: Dict[str, int] = field(default_factory=dict)  # listing-shaped lines, by kind

    def state(self, key: str, value: str, quote: Quote, weight: int = PROSE) -> None:
        value = value.strip()
        if not value:
            return
        known = self.values.get(key)
        if known is None or weight > known.weight:
            self.values[key] = Stated(value, quote, weight)

    def package(self, name: str, version: str, quote: Quote, weight: int = LISTING) -> None:
        key = canonical(name)
        known = self.packages.get(key)
        if known is None or weight > known.weight:
            self.packages[key] = Stated(version.strip(), quote, weight)

    def mark(self, key: str, quote: Quote) -> None:
        self.marks.setdefault(key, Stated(key, quote, TOOL))

    def get(self, key: str) -> Optional[str]:
        stated = self.values.get(key)
        return stated.value if stated else None

    def quotes(self, *keys: str) -> List[Quote]:
        return [self.values[k].quote for k in keys if k in self.values]


def canonical(name: str) -> str:
    """PEP 503: flash_attn, Flash.Attn and flash-attn are one distribution."""
    out: List[str] = []
    dash = False
    for ch in name.strip().lower():
        if ch in "-_.":
            dash = True
            continue
        if dash and out:
            out.append("-")
        dash = False
        out.append(ch)
    return "".join(out)
