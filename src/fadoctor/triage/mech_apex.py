"""NVIDIA apex's own build check: its setup.py compares the nvcc it builds with against the CUDA
torch was built with and stops on any difference (NVIDIA/apex setup.py,
check_cuda_torch_binary_vs_bare_metal: "Cuda extensions are being compiled with a version of Cuda
that does not match the version used to compile Pytorch binaries.  Pytorch binaries were compiled
with Cuda {torch.version.cuda}."; older releases printed it as a warning before nvcc failed)
(pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_NOT_MATCHING = re.compile(r"compiled with a version of Cuda that does\s+not match the version "
                           r"used to compile\s+Pytorch binaries", re.I)
_TORCH_CUDA = re.compile(r"Pytorch binaries were compiled with Cuda (\d+\.\d+)", re.I)


def cuda_mismatch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NOT_MATCHING, ("compiled with a version of cuda",))
    if hit is None:
        return []
    said = ctx.first(_TORCH_CUDA, ("pytorch binaries were compiled with cuda",))
    built = said[1].group(1) if said is not None else None
    nvcc = f"nvcc {ctx.nvcc}" if ctx.nvcc else "the nvcc on PATH / CUDA_HOME"
    want = f"CUDA {built}" if built else "torch's CUDA (torch.version.cuda)"
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.quote(said[0])] if said else []),
                     *ctx.quotes("nvcc", "torch")])
    major = int(built.split(".")[0]) if built else None
    home = f"/usr/local/cuda-{built}" if built else "/usr/local/cuda"  # the toolkit's folder
    fitting = r.torch_for_cuda(ctx, ctx.nvcc.major, ctx.nvcc) if ctx.nvcc and major and \
        ctx.nvcc.major != major else None
    return [Signal("apex_cuda_mismatch", Category.CUDA_RUNTIME_MISMATCH,
                   f"apex's setup.py builds its CUDA extensions with {nvcc}, but torch was built "
                   f"with {want}: apex refuses to compile with a different CUDA", quotes, NAMED,
                   r.keep([Remedy(summary=f"Build apex with the same CUDA as torch: install the "
                                  f"{want} toolkit and point CUDA_HOME at it (apex's setup.py "
                                  "runs $CUDA_HOME/bin/nvcc), then build again.",
                                  commands=[f"export CUDA_HOME={home}", f"{home}/bin/nvcc -V"]),
                           fitting]))]
