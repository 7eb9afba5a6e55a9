"""DeepSpeed's op builder refusing a JIT build: "Installed CUDA version X does not match the
version torch was compiled with Y, unable to compile cuda/cpp extensions without a matching cuda
version." (deepspeed/ops/op_builder/builder.py, assert_no_cuda_mismatch: raised when the CUDA
majors differ; a minor mismatch within one major only warns "but since the APIs are compatible,
accepting this combination"). DeepSpeed's install guide (docs/_tutorials/advanced-install.md,
"CUDA version mismatch") gives the ways out: a toolkit of torch's CUDA, a torch of the toolkit's,
or DS_SKIP_CUDA_CHECK=1 (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_MISMATCH = re.compile(r"Installed CUDA version (\d+\.\d+) does not match the version torch was "
                       r"compiled with (\d+\.\d+)(?:\.\d+)?(?! but since)")


def cuda_mismatch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MISMATCH, ("installed cuda version",))
    if hit is None:
        return []
    installed, torch_cuda = hit[1].group(1), hit[1].group(2)
    toolkit = Remedy(summary=f"Install CUDA toolkit {torch_cuda} (torch's CUDA) and point "
                     "CUDA_HOME at it: DeepSpeed's op builder compiles with the nvcc under "
                     "CUDA_HOME (or on PATH), and needs it to match torch's CUDA major.",
                     commands=[f"export CUDA_HOME=/usr/local/cuda-{torch_cuda}",
                               f"/usr/local/cuda-{torch_cuda}/bin/nvcc --version"])
    skip = Remedy(summary="Or skip the check with DS_SKIP_CUDA_CHECK=1 (DeepSpeed's install "
                  "guide): a build across CUDA majors may still fail or misbehave, so prefer a "
                  "matching pair; or turn off the feature that JIT-builds the op (the CPU "
                  "optimizer of offload_optimizer, for one).",
                  commands=["export DS_SKIP_CUDA_CHECK=1"])
    return [Signal("deepspeed_cuda_mismatch", Category.BUILD_TOOLCHAIN,
                   f"DeepSpeed's op builder refuses to JIT-compile its CUDA ops: the installed "
                   f"CUDA toolkit is {installed} and torch was built for CUDA {torch_cuda} (the "
                   "majors must match)",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch", "nvcc")]), NAMED,
                   r.keep([toolkit, r.torch_for_cuda(ctx, Version(installed).major), skip]),
                   details={"nvcc": installed, "torch_cuda": torch_cuda})]
