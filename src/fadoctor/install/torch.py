"""torch builds: a CUDA variant and its CUDA version, the PyTorch wheel index, the install command,
and the variant a driver runs (pure, over the matrix)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.matrix import Matrix
from fadoctor.matrix.models import TorchRelease
from fadoctor.safety.shell import command, requirement, url

# PyTorch's wheel index per CUDA variant (pytorch.org "Get started: previous versions").
TORCH_INDEX = "https://download.pytorch.org/whl/{variant}"


def torch_index(variant: str) -> str:
    return TORCH_INDEX.format(variant=variant)


def cuda_of_variant(variant: str) -> Version:
    """cu130 -> 13.0, cu121 -> 12.1, cu118 -> 11.8."""
    digits = variant[2:]
    return Version(f"{digits[:-1]}.{digits[-1]}")


def variant_of_cuda(cuda: str) -> str:
    """torch.version.cuda -> its wheel variant: 12.1 -> cu121, 13.0 -> cu130."""
    major, minor = (Version(cuda).release + (0,))[:2]
    return f"cu{major}{minor}"


@dataclass(frozen=True)
class TorchBuild:
    """One torch build to pair flash-attn with: version, CUDA variant and C++ ABI."""

    version: Version  # base version, 2.4.0
    variant: str  # cu121
    cxx11_abi: bool
    installed: bool = False

    @property
    def minor(self) -> str:
        return f"{self.version.major}.{self.version.minor}"

    @property
    def cuda(self) -> Version:
        return cuda_of_variant(self.variant)

    def __str__(self) -> str:
        return f"torch {self.version}+{self.variant}"


def installed_build(version: Optional[Version], cuda: Optional[str],
                    cxx11_abi: Optional[bool]) -> Optional[TorchBuild]:
    """The installed torch as a build, when its version, CUDA and C++ ABI are all known."""
    if version is None or not cuda or cxx11_abi is None:
        return None
    try:
        variant = variant_of_cuda(cuda)
    except InvalidVersion:  # a torch that says its CUDA is "banana": unknown
        return None
    return TorchBuild(Version(version.base_version), variant, cxx11_abi, installed=True)


_VARIANT = re.compile(r"\+((?:cpu|cu\d+|rocm[\d.]+|xpu))$")


def index_args(torch_version: str) -> List[str]:
    """`--index-url` of PyTorch's index for a local-version torch (2.13.0+cpu), which only that
    index carries; none for a plain version (the default index has it)."""
    variant = _VARIANT.search(torch_version)
    return ["--index-url", url(torch_index(variant.group(1)))] if variant else []


def extra_index_args(torch_version: str) -> List[str]:
    """`--extra-index-url` of PyTorch's index for a local-version torch: with `torch==X` (no
    local label) pip then takes X+variant from there, and every other package from the default
    index (vLLM is not on PyTorch's)."""
    variant = _VARIANT.search(torch_version)
    return ["--extra-index-url", url(torch_index(variant.group(1)))] if variant else []


def torch_install(torch_version: str, variant: str) -> str:
    return command("pip", "install", requirement("torch", f"{torch_version}+{variant}"),
                   "--index-url", url(torch_index(variant)))


def variant_for_driver(matrix: Matrix, rel: TorchRelease, driver: Optional[Version]
                       ) -> Optional[Tuple[str, bool]]:
    """The newest CUDA variant of a torch release this driver runs, and whether with CUDA's full
    feature set (the toolkit's own driver) or only under minor-version compatibility (the
    major's floor)."""
    if driver is None:
        return rel.default_variant, True
    full: List[Version] = []
    compat: List[Version] = []
    for variant in rel.cuda_variants:
        cuda = cuda_of_variant(variant)
        needed = matrix.toolkit_driver(cuda)
        floor = matrix.driver_floor(cuda.major)
        if needed is not None and driver >= needed.min_driver:
            full.append(cuda)
        elif floor is not None and driver >= floor.min_driver:
            compat.append(cuda)
    for found, complete in ((full, True), (compat, False)):
        if found:
            return variant_of_cuda(str(max(found))), complete
    return None
