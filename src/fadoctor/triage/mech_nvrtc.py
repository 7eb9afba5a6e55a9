"""NVRTC refusing the GPU's architecture: "nvrtc: error: invalid value for --gpu-architecture
(-arch)" (NVRTC's option parser, the runtime compiler torch's jiterator and fused kernels call
with the GPU's compute_XY): the NVRTC of torch's CUDA predates the GPU (CUDA 11.7 knows no
sm_89), so the fix is a torch built with a CUDA that knows it — its arch list in the matrix holds
the GPU (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_NVRTC_ARCH = re.compile(r"nvrtc: error: invalid value for --gpu-architecture")


def arch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NVRTC_ARCH, ("nvrtc",))
    if hit is None:
        return []
    fitting: Optional[Remedy] = None
    for major in (11, 12, 13):  # the oldest CUDA major with a torch build for the GPU
        fitting = r.torch_for_cuda(ctx, major) if ctx.gpu_cc_exact is not None else None
        if fitting is not None:
            break
    gpu = ctx.gpu[0] if ctx.gpu else "this GPU"
    return [Signal("nvrtc_arch", Category.NO_KERNEL_IMAGE,
                   f"the NVRTC of torch's CUDA{f' {ctx.torch_cuda}' if ctx.torch_cuda else ''} "
                   f"does not know {gpu}'s architecture: that CUDA predates the GPU",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else []),
                           *ctx.quotes("torch")]), NAMED,
                   r.keep([fitting, Remedy(summary="Install a torch built with a CUDA that "
                                           "knows this GPU (`fadoctor fix --print-pins` picks "
                                           "the build for it).",
                                           commands=["fadoctor fix --print-pins"])]))]
