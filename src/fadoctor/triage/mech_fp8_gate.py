"""A program's own check refusing FP8 on a GPU that has FP8 tensor cores: FP8 matrix math runs on
compute capability 8.9 (Ada) and newer (Hopper 9.0, Blackwell 10.x and 12.x; torch's own gate,
_scaled_mm_allowed_device in aten/src/ATen/native/cuda/Blas.cpp, admits sm_89 and up). A program that
says "fp8 ... not supported" on such a GPU checked it against a list older than the GPU (an RTX
40 series test meeting an RTX 50): that release of the program predates the GPU (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import IMPLIED, Signal, dedupe

SOURCE = ("pytorch/pytorch aten/src/ATen/native/cuda/Blas.cpp (_scaled_mm_allowed_device: FP8 "
          "from sm_89; pytorch/pytorch#118703)")
_REFUSED = re.compile(r"\bfp8\b[^.\n]{0,40}?\b(?:is|are) not supported\b(?![^\n]{0,30}\b(?:in this "
                      r"architecture|cuda arch))", re.I)


def stale_gate(ctx: Context) -> List[Signal]:
    cc = ctx.gpu_cc_exact
    if ctx.gpu is None or cc is None or cc < Version("8.9"):
        return []
    hit = ctx.first(_REFUSED, ("fp8",), ("not supported",))
    if hit is None:
        return []
    return [Signal("fp8_gate_stale", Category.GPU_UNSUPPORTED,
                   f"the program refuses FP8 (\"{hit[1].group(0)}\") on {ctx.gpu[0]}, which has "
                   f"FP8 tensor cores (compute capability {cc}; FP8 runs from 8.9): its check "
                   "predates this GPU (a list of the GPUs it knew)",
                   dedupe([ctx.quote(hit[0]), ctx.gpu[2]]), IMPLIED,
                   [Remedy(summary="Update the program to its latest release (git pull in its "
                           "folder, or pip install --upgrade), whose check knows this GPU; "
                           "meanwhile run without its FP8 compute option (the weights can stay "
                           "stored in FP8).")],
                   details={"source": SOURCE})]
