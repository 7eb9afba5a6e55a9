"""MSVC's C++ standard library refusing the nvcc that compiles with it: "error STL1002:
Unexpected compiler version, expected CUDA 12.4 or newer." (microsoft/STL stl/inc/yvals_core.h,
`_EMIT_STL_ERROR(STL1002, ...)` under `#ifndef _ALLOW_COMPILER_AND_STL_VERSION_MISMATCH`). Each
Visual Studio toolset's STL names the oldest CUDA it takes; the floor rose with the toolset
updates of microsoft/STL: CUDA 11.6 from VS 2022 17.3 (#2791, June 2022), 12.4 from VS 2022 17.10
(#4475, March 2024), 13.2 from MSVC 19.51 (#6157, March 2026), 13.3 from MSVC 19.52 (#6346, June
2026). So a toolkit older than the floor builds only with an older MSVC toolset, or past the
check with the macro the STL names (unsupported) (pure)."""

from __future__ import annotations

import re
from typing import List, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.signal import NAMED, Signal, dedupe

_STL1002 = re.compile(r"STL1002:? Unexpected compiler version, expected CUDA (\d+\.\d+) or newer")
# the toolsets between two floors: (the oldest CUDA their STL takes, which they are)
_TOOLSETS: Tuple[Tuple[str, str], ...] = (
    ("0", "Visual Studio 2019, or Visual Studio 2022 17.2 or older"),
    ("11.6", "Visual Studio 2022 17.3 to 17.9 (MSVC toolset 14.39 or older; vcvars64.bat "
             "-vcvars_ver=14.39)"),
    ("12.4", "a Visual Studio 2022 toolset from 17.10 (14.4x)"),
    ("13.2", "MSVC Compiler 19.51"))
SOURCE = "microsoft/STL stl/inc/yvals_core.h (STL1002; toolset updates #2791, #4475, #6157, #6346)"


def stl_floor(ctx: Context) -> List[Signal]:
    hit = ctx.first(_STL1002, ("stl1002",))
    if hit is None:
        return []
    floor = Version(hit[1].group(1))
    # the toolkit the build uses, where the report says
    cuda = ctx.nvcc or ctx.torch_cuda or parse_version(ctx.seen.get(o.CUDA))
    older = [vs for at, vs in _TOOLSETS if Version(at) < floor
             and (cuda is None or Version(at) <= cuda)]
    older_vs = older[-1] if older else None
    return [Signal("msvc_stl_floor", Category.BUILD_TOOLCHAIN,
                   f"MSVC's standard library headers refuse this nvcc: the Visual Studio toolset "
                   f"installed needs CUDA {floor} or newer, and the build's CUDA toolkit is older",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("nvcc")]), NAMED,
                   [Remedy(summary=f"Install CUDA {floor} or newer (and point CUDA_HOME/CUDA_PATH "
                           "at it), where the torch the build is for has a build of that CUDA "
                           "major."),
                    Remedy(summary="Or keep the toolkit and build with an older MSVC toolset "
                           "whose STL takes it"
                           + (f": {older_vs}, installed beside the current one (Visual Studio "
                              "Installer, Build Tools' individual components)" if older_vs else "")
                           + ", from its developer prompt."),
                    Remedy(summary="Or, unsupported, skip the STL's check: define "
                           "_ALLOW_COMPILER_AND_STL_VERSION_MISMATCH for nvcc (the STL names it; "
                           "code the toolkit cannot parse may still fail).",
                           commands=["set NVCC_PREPEND_FLAGS=-D_ALLOW_COMPILER_AND_STL_VERSION_"
                                     "MISMATCH"])],
                   details={"source": SOURCE})]
