"""Compiled ops a package builds only on request, missing at run time (pure):
- BasicSR (under GFPGAN, Real-ESRGAN, CodeFormer): basicsr/ops/dcn, fused_act and upfirdn2d try
  `from . import deform_conv_ext` and pass on ImportError, unless BASICSR_JIT=True compiles them
  at run time; `pip install basicsr` builds them only with BASICSR_EXT=True (BasicSR's
  INSTALL.md), so the first call says "name 'fused_act_ext' is not defined" or "cannot import name
  'deform_conv_ext'";
- flash-attn's FusedMLP, which code imports with a fallback to None: flash_attn/ops/fused_dense.py
  imports fused_dense_lib, a separate build from flash-attention's csrc/fused_dense_lib;
- GFPGAN's and Real-ESRGAN's "The unoptimized RealESRGAN is slow on CPU. We do not use it.":
  torch.cuda.is_available() was False, on a machine whose GPU is NVIDIA's: a CPU build of torch."""

from __future__ import annotations

import re
from typing import List

from fadoctor.checks.import_remedies import csrc_remedies
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_BASICSR = re.compile(r"name '(deform_conv_ext|fused_act_ext|upfirdn2d_ext)' is not defined|"
                      r"cannot import name '(deform_conv_ext|fused_act_ext|upfirdn2d_ext)'")
_FUSED_MLP = re.compile(r"\bFusedMLP\b[^\n]{0,120}(?:None|not callable)|'NoneType' object is not "
                        r"callable[^\n]{0,200}FusedMLP", re.I)
_ESRGAN_CPU = re.compile(r"The unoptimized RealESRGAN is slow on CPU")


def basicsr_ops(ctx: Context) -> List[Signal]:
    hit = ctx.first(_BASICSR, ("_ext",))
    if hit is None:
        return []
    op = hit[1].group(1) or hit[1].group(2)
    return [Signal("optional_ops", Category.NOT_INSTALLED,
                   f"BasicSR's compiled op {op} was never built: `pip install basicsr` compiles "
                   "its CUDA ops only with BASICSR_EXT=True", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Build BasicSR with its ops (a CUDA toolkit of torch's CUDA "
                           "major, CUDA_HOME set), in the environment that runs it; or set "
                           "BASICSR_JIT=True to compile them at the first run.",
                           commands=[command(env("BASICSR_EXT", "True"), "pip", "install",
                                             "--no-build-isolation", "--no-cache-dir",
                                             "--force-reinstall", "--no-deps", "basicsr")])])]


def fused_mlp(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FUSED_MLP, ("fusedmlp",))
    if hit is None:
        return []
    return [Signal("optional_ops", Category.NOT_INSTALLED,
                   "FusedMLP is None: flash-attn's flash_attn.ops.fused_dense needs "
                   "fused_dense_lib, which flash-attn's wheel does not include",
                   [ctx.quote(hit[0])], NAMED, csrc_remedies("fused_dense_lib"))]


def esrgan_on_cpu(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ESRGAN_CPU, ("slow on cpu",))
    nvidia = next((g for g in ctx.seen.gpus if g.vendor == "nvidia"), None)
    if hit is None or nvidia is None:
        return []
    return [Signal("esrgan_cpu", Category.TORCH_CPU_ONLY,
                   f"torch sees no CUDA device on this {nvidia.name}: the installed torch is its "
                   "CPU build (the app checks torch.cuda.is_available())",
                   dedupe([ctx.quote(hit[0]), nvidia.quote]), NAMED,
                   [Remedy(summary="Reinstall torch (and torchvision) as the CUDA build, from "
                           "PyTorch's index for the CUDA your driver runs (its install selector "
                           "gives the --index-url); this must print True:",
                           commands=[command("python", "-c", "import torch; "
                                             "print(torch.cuda.is_available())")])])]
