"""A build told which GPU architectures to compile for, none of which runs on the GPU the report
names: TORCH_CUDA_ARCH_LIST, flash-attn's FLASH_ATTN_CUDA_ARCHS, CUTLASS's CUTLASS_NVCC_ARCHS,
CMake's CMAKE_CUDA_ARCHITECTURES, nvcc's -arch / -gencode. SASS for sm_XY runs on the same major
with a minor of Y or more, an arch-specific sm_XYa only on XY itself, and PTX for compute_XY is
compiled by the driver for any newer GPU (NVIDIA's CUDA C++ Programming Guide, "Binary
Compatibility" and "PTX Compatibility"; "Feature Set Compiler Targets" for the a suffix) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, Signal, dedupe

# One arch: (major, minor, suffix, ptx)
Arch = Tuple[int, int, str, bool]
_SETTING = re.compile(
    r"(TORCH_CUDA_ARCH_LIST|FLASH_ATTN_CUDA_ARCHS|CUTLASS_NVCC_ARCHS|CMAKE_CUDA_ARCHITECTURES)"
    r"\s{0,2}=\s{0,2}(?:\"([^\"\n]{1,80})\"|'([^'\n]{1,80})'|([^\s\"']{1,80}))|"
    r"(?:-arch[= ]|-gencode[= ]arch=)(?:sm|compute)_(\d{2,3}[af]?)")
_CMAKE = ("CUTLASS_NVCC_ARCHS", "CMAKE_CUDA_ARCHITECTURES")
_ONE = re.compile(r"(\d{1,2})\.(\d)([af]?)(\+PTX)?|(\d{2,3})([af]?)")


def _archs(variable: Optional[str], value: str) -> List[Arch]:
    out: List[Arch] = []
    for m in _ONE.finditer(value):
        if m.group(1):
            out.append((int(m.group(1)), int(m.group(2)), m.group(3), bool(m.group(4))))
        else:
            digits = m.group(5)
            out.append((int(digits[:-1]), int(digits[-1]), m.group(6),
                        variable == "CMAKE_CUDA_ARCHITECTURES" and "real" not in value))
    return out


def runs_on(arch: Arch, cc: Version) -> bool:
    major, minor, suffix, ptx = arch
    if ptx:
        return (cc.major, cc.minor) >= (major, minor)
    if suffix == "a":
        return (cc.major, cc.minor) == (major, minor)
    return cc.major == major and cc.minor >= minor


def _value(variable: str, cc: Version) -> str:
    """The GPU's own arch in the variable's notation."""
    if variable == "TORCH_CUDA_ARCH_LIST":
        return f"{cc.major}.{cc.minor}"
    return f"{cc.major}{cc.minor}"


def built_for_others(ctx: Context) -> List[Signal]:
    gpu, cc = ctx.gpu, ctx.gpu_cc_exact
    if gpu is None or cc is None:
        return []
    for index, found in ctx.find(_SETTING, ("arch", "gencode")):
        variable = found.group(1)
        value = found.group(2) or found.group(3) or found.group(4) or found.group(5)
        archs = _archs(variable, value)
        if not archs or any(runs_on(a, cc) for a in archs):
            continue
        shown = ", ".join(f"sm_{a[0]}{a[1]}{a[2]}{'+PTX' if a[3] else ''}" for a in archs)
        own = f"{cc.major}{cc.minor}"
        fix = [] if variable is None else [f"cmake .. -D{variable}={own}"] if variable in _CMAKE \
            else [f"export {variable}={_value(variable, cc)}"]
        return [Signal("arch_list", Category.NO_KERNEL_IMAGE,
                       f"the build compiles only for {shown}; the {gpu[0]} is sm_{own} "
                       f"(compute capability {cc}), which none of them runs on",
                       dedupe([ctx.quote(index), gpu[2]]), HINTED,
                       [Remedy(summary=f"Build for this GPU's own architecture, sm_{own} (SASS "
                               "for another major, or an arch-specific 'a' target of another "
                               "GPU, never runs on it), then rebuild from a clean build folder.",
                               commands=fix)])]
    return []
