"""torch.distributed asked for NCCL in a torch built without it: "Distributed package doesn't have
NCCL built in" (torch/distributed/distributed_c10d.py, raised when the nccl backend is requested
and `is_nccl_available()` is false). PyTorch's Windows and macOS builds have no NCCL (its
distributed docs: on Windows only the Gloo backend), nor do its CPU-only builds (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows
from fadoctor.triage.signal import NAMED, Signal, dedupe

_NO_NCCL = re.compile(r"Distributed package doesn't have NCCL built in", re.I)
_CUDA_TORCH = Remedy(summary="Install a CUDA build of torch from the PyTorch index for the CUDA "
                     "your driver runs (`fadoctor fix` picks it).",
                     commands=["fadoctor fix --print-pins"])
_MAC = re.compile(r"\bmacos\b|\bdarwin\b|\bapple (?:silicon|m[1-4])\b|\bmps\b", re.I)


def no_nccl(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_NCCL, ("have nccl built in",))
    if hit is None:
        return []
    quotes = dedupe([ctx.quote(hit[0]), *ctx.quotes("torch", "os")])
    gloo = Remedy(summary="Use the Gloo backend, which every torch build has: "
                  "torch.distributed.init_process_group(backend=\"gloo\") (in a launcher, its "
                  "backend option, e.g. Accelerate's or torchrun's script argument; a single GPU "
                  "needs no process group at all).",
                  code='torch.distributed.init_process_group(backend="gloo")')
    cpu = str(ctx.seen.get(o.TORCH) or "").endswith("+cpu") or (ctx.torch_cuda is None and \
        ctx.has("+cpu", "cpu-only", "cpu only") is not None)
    if on_windows(ctx) or ctx.first(_MAC, ("macos", "darwin", "apple", "mps")) is not None:
        where = "Windows" if on_windows(ctx) else "macOS"
        return [Signal("no_nccl", Category.PLATFORM_UNSUPPORTED,
                       f"PyTorch's {where} builds have no NCCL, so the nccl backend cannot start: "
                       "only Gloo is built in there", quotes, NAMED,
                       [gloo, Remedy(summary="For NCCL (multi-GPU speed), run it on Linux: on "
                                     "Windows under WSL2 with a Linux CUDA build of torch.")])]
    if cpu:
        return [Signal("no_nccl", Category.TORCH_CPU_ONLY,
                       "this torch is a CPU-only build, which has no NCCL (and no CUDA)", quotes,
                       NAMED, [_CUDA_TORCH, gloo])]
    return [Signal("no_nccl", Category.PLATFORM_UNSUPPORTED,
                   "this torch build has no NCCL: PyTorch's Windows and macOS builds and its "
                   "CPU-only builds have none, so the nccl backend cannot start", quotes, NAMED,
                   [gloo, Remedy(summary="For NCCL, use a Linux CUDA build of torch (on "
                                 "Windows, under WSL2)."), _CUDA_TORCH],
                   needs=[("the OS and torch build", "python -m torch.utils.collect_env")])]
