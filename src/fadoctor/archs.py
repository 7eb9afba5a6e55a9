"""GPU architecture names (sm_90, sm_90a, sm_100f, compute_90) and CUDA's rule for where code
built for one runs (pure; shared by the torch arch-list check and the fatbin analysis)."""

from __future__ import annotations

import re
from typing import Tuple

ARCH = re.compile(r"(sm|compute)_(\d{2,})([af]?)")


def arch_runs_on(arch: str, cc: Tuple[int, int]) -> bool:
    """Whether an image for `arch` (sm_90, sm_90a, sm_100f, compute_90, ...) runs on `cc`.

    CUDA Programming Guide, "Compute Capabilities" > "Feature Availability", and NVIDIA's CUDA
    12.9 post on family-specific features: SASS runs on its own major with an equal or higher
    minor; PTX is JIT-compiled for any equal or newer GPU; an `a` target runs on that exact
    compute capability only; an `f` target on its own major with an equal or higher minor
    (sm_100f on 10.0 and 10.3, never on 11.x or 12.x), for SASS and PTX alike.
    """
    match = ARCH.fullmatch(arch)
    if match is None:
        return False
    kind, digits, suffix = match.groups()
    target = (int(digits[:-1]), int(digits[-1]))
    if suffix == "a":
        return cc == target
    if suffix == "f" or kind == "sm":
        return cc[0] == target[0] and cc[1] >= target[1]
    return cc >= target


def arch_key(arch: str) -> Tuple[int, str, str]:
    """Order archs as people read them: sm_75 < sm_80 < sm_90 < sm_90a < sm_100."""
    match = ARCH.fullmatch(arch)
    return (int(match.group(2)), match.group(3), arch) if match else (0, "", arch)


def arch_name(item: str) -> str:
    """A TORCH_CUDA_ARCH_LIST item ("9.0", "12.0+PTX") as torch.cuda.get_arch_list() names it:
    SASS sm_90, or PTX compute_120 for a +PTX item."""
    digits = item.replace("+PTX", "").replace(".", "")
    return f"compute_{digits}" if item.endswith("+PTX") else f"sm_{digits}"


# The first CUDA whose nvcc compiles for each arch: pytorch/pytorch@189579e2:cmake/
# Modules_CUDA_fix/upstream/FindCUDA/select_compute_arch.cmake (Turing after 9.5, Ampere 8.0 after
# 10.5, 8.6 from 11.1, Ada 8.9 and Hopper from 11.8); Blackwell: CUDA Features Archive (12.8 adds
# sm_100, sm_101, sm_120; 12.9 adds sm_103, sm_121 and the family-specific targets, sm_100f and
# the like)
FIRST_NVCC = {"75": "10.0", "80": "11.0", "86": "11.1", "89": "11.8", "90": "11.8",
              "100": "12.8", "101": "12.8", "120": "12.8", "103": "12.9", "121": "12.9"}
FAMILY_NVCC = "12.9"
