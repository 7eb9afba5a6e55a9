"""Two non-NVIDIA stacks that present themselves as CUDA or extend torch (pure):
- ZLUDA runs CUDA programs on AMD GPUs; its README (vosen/ZLUDA, Known Issues): "limited support
  for performance libraries (cuDNN, cuBLAS, cuSPARSE, cuFFT, OptiX, NCCL). Currently, this
  support is Linux-only and not available on Windows", and for PyTorch "ZLUDA's coverage of cuDNN
  APIs is very minimal". So a cuDNN call fails ("CUDNN_STATUS_INTERNAL_ERROR") and torch must not
  use cuDNN: torch.backends.cudnn.enabled = False.
- Intel Extension for PyTorch is built against one torch minor and checks it at import:
  "ERROR! Intel® Extension for PyTorch* needs to work with PyTorch 2.8.*, but PyTorch 2.7.1 is
  found" (intel_extension_for_pytorch/__init__.py); IPEX 2.x.10+xpu releases pair with torch
  2.x from PyTorch's xpu index."""

from __future__ import annotations

import re
from typing import List

from fadoctor.install.torch import torch_index
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, url
from fadoctor.triage.context import Context
from fadoctor.triage.signal import IMPLIED, NAMED, Signal, dedupe

_CUDNN_STATUS = re.compile(r"CUDNN_STATUS_(?:INTERNAL_ERROR|NOT_SUPPORTED|NOT_INITIALIZED|"
                           r"EXECUTION_FAILED)")
_ZLUDA = re.compile(r"\bzluda\b", re.I)
_IPEX_CHECK = re.compile(r"Extension for PyTorch\*? needs to work with PyTorch (\d+\.\d+)\.\*, "
                         r"but PyTorch (\S+?) is found")
_IPEX_STATED = re.compile(r"\b(?:ipex|intel[-_]extension[-_]for[-_]pytorch)[\s=:]{1,4}v?"
                          r"(\d+\.\d+)", re.I)


def zluda_cudnn(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUDNN_STATUS, ("cudnn_status_",))
    zluda = ctx.first(_ZLUDA, ("zluda",))
    if hit is None or zluda is None:
        return []
    return [Signal("zluda_cudnn", Category.PLATFORM_UNSUPPORTED,
                   "this CUDA program runs on an AMD GPU through ZLUDA, whose cuDNN is absent on "
                   "Windows and minimal on Linux: torch's cuDNN calls fail there",
                   dedupe([ctx.quote(hit[0]), ctx.quote(zluda[0])]), NAMED,
                   [Remedy(summary="Turn cuDNN off in torch before the model runs (convolutions "
                           "then take torch's own kernels); apps built for ZLUDA have an option "
                           "for it.", code="import torch\ntorch.backends.cudnn.enabled = False"),
                    Remedy(summary="Or run on Linux with a ROCm build of torch, where MIOpen "
                           "takes cuDNN's place.")])]


def ipex_torch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_IPEX_CHECK, ("needs to work with pytorch",))
    if hit is not None:
        index, wants, found = hit[0], hit[1].group(1), hit[1].group(2)
        strength = NAMED
    else:
        stated = ctx.first(_IPEX_STATED, ("ipex", "intel"))
        torch = ctx.torch
        if stated is None or torch is None or stated[1].group(1) == f"{torch.major}.{torch.minor}":
            return []
        index, wants, found, strength = stated[0], stated[1].group(1), str(torch), IMPLIED
    return [Signal("ipex_torch", Category.TORCH_VERSION_MISMATCH,
                   f"Intel Extension for PyTorch {wants} is built for torch {wants}, and torch "
                   f"{found} is installed: IPEX works only with the torch minor it was built for",
                   dedupe([ctx.quote(index), *ctx.quotes("torch")]), strength,
                   [Remedy(summary=f"Install torch {wants} (from PyTorch's xpu index for an Intel "
                           "GPU, its cpu index otherwise), or the IPEX release built for the "
                           "installed torch (IPEX's installation page pairs them).",
                           commands=[command("pip", "install", f"torch=={wants}.*",
                                             "--index-url", url(torch_index("xpu")))])],
                   details={"source": "intel/intel-extension-for-pytorch __init__.py (its torch "
                                      "version check)"})]


# A torch without Intel GPU support asked for an XPU: torch's own "Torch not compiled with XPU
# enabled" (torch/xpu/__init__.py, _lazy_init) and "PyTorch is not linked with support for xpu
# devices" (c10's device guard). torch 2.5 and later build XPU support into the wheels of PyTorch's
# xpu index (the +xpu builds); the default wheels are CUDA or CPU builds.
_NO_XPU = re.compile(r"Torch not compiled with XPU enabled|PyTorch is not linked with support "
                     r"for xpu devices")


def no_xpu(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_XPU, ("compiled with xpu", "support for xpu"))
    if hit is None:
        return []
    torch = f"torch {ctx.torch}" if ctx.torch else "the installed torch"
    return [Signal("torch_no_xpu", Category.TORCH_CPU_ONLY,
                   f"{torch} is a build without Intel GPU (XPU) support: a CPU or CUDA build, or "
                   "one older than torch's own XPU builds",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED,
                   [Remedy(summary="Reinstall torch from PyTorch's xpu index (its +xpu builds, "
                           "torch 2.5 and later; with the matching torchvision and torchaudio), "
                           "into the Python that runs it; an app with its own installer has an "
                           "option to reinstall torch for Intel GPUs.",
                           commands=[command("pip", "install", "--force-reinstall", "torch",
                                             "torchvision", "torchaudio", "--index-url",
                                             url(torch_index("xpu")))])],
                   details={"source": "torch/xpu/__init__.py (_lazy_init)"})]
