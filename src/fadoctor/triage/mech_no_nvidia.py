"""A CUDA error on a machine whose only GPU the report names is not NVIDIA's (Intel's integrated
Iris Xe/UHD graphics or Arc, or an AMD GPU under a CUDA build of torch): CUDA runs on NVIDIA GPUs
only, so "CUDA driver version is insufficient", "no CUDA GPUs are available" or "Found no NVIDIA
driver" mean there is no NVIDIA GPU at all, not an old driver (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context
from fadoctor.triage.mech_cpu_build import MAC
from fadoctor.triage.signal import NAMED, Signal, dedupe

_CUDA_FAILED = re.compile(r"CUDA driver version is insufficient for CUDA runtime version|No CUDA "
                          r"GPUs are available|Found no NVIDIA driver on your system|no CUDA-capable "
                          r"device is detected|Torch not compiled with CUDA enabled|CUDA driver "
                          r"initialization failed|No HIP GPUs are available", re.I)


# torch's ROCm builds say "No HIP GPUs are available" (torch/cuda/__init__.py, _lazy_init)
_ROCM = re.compile(r"\bROCm\b|No HIP GPUs", re.I)
_CUDA_TORCH = re.compile(r"Found no NVIDIA driver on your system|Torch not compiled with CUDA enabled")


def no_nvidia_gpu(ctx: Context) -> List[Signal]:
    if any(g.vendor == "nvidia" for g in ctx.seen.gpus):
        return []
    other = next((g for g in ctx.seen.gpus if g.vendor == "intel"
                  or (g.vendor == "amd" and not (ctx.seen.get(o.ROCM) or ctx.seen.get(o.TORCH_HIP)))),
                 None)
    failed = ctx.first(_CUDA_FAILED, ("cuda", "nvidia", "no hip gpus"))
    if other is None or failed is None:
        return []
    vendor = "Intel" if other.vendor == "intel" else "AMD"
    rocm = ctx.first(_ROCM, ("rocm", "no hip gpus"))
    if vendor == "AMD" and rocm is not None and _CUDA_TORCH.search(ctx.text.lines[failed[0]]):
        # the CUDA build's own words (torch/cuda/__init__.py, _check_driver): a ROCm build
        # says "No HIP GPUs are available" instead
        return [Signal("no_nvidia_gpu", Category.WRONG_WHEEL,
                       f"the installed torch is its CUDA build, which looks for an NVIDIA driver, "
                       f"and the GPU is AMD's ({other.name}) under ROCm: the install took the "
                       "wrong torch", dedupe([ctx.quote(failed[0]), other.quote, ctx.quote(rocm[0])]),
                       NAMED + 5,
                       [Remedy(summary="Reinstall torch (and torchvision, torchaudio) from PyTorch's "
                               "ROCm index for the host's ROCm release (pip install torch "
                               "--index-url with the ROCm URL pytorch.org's selector gives), "
                               "replacing the CUDA build and its nvidia-* wheels; where an "
                               "installer chose it, set its GPU choice to AMD/ROCm.",
                               commands=["rocminfo"])])]
    if vendor == "AMD" and rocm is not None:  # a ROCm torch names HIP devices "CUDA"
        return [Signal("no_nvidia_gpu", Category.ROCM,
                       f"a ROCm install that finds no GPU on the {other.name}: ROCm torch reports "
                       "HIP devices as CUDA ones, and finds none when the ROCm build does not "
                       "support the card's gfx target (a card newer than the ROCm release) or the "
                       "ROCm runtime cannot reach it",
                       dedupe([ctx.quote(failed[0]), other.quote, ctx.quote(rocm[0])]), NAMED + 5,
                       [Remedy(summary=f"Install a torch built for a ROCm release that supports the "
                               f"{other.name}'s gfx target (rocminfo names it; AMD's ROCm "
                               "compatibility matrix lists the release that added it), in a "
                               "fresh venv (no CUDA torch wheels left beside it), with the host's "
                               "amdgpu driver and ROCm runtime installed (amdgpu-install); and "
                               "check that the user is in the render and video groups.",
                               commands=["rocminfo"])])]
    return [Signal("no_nvidia_gpu", Category.NO_GPU,
                   f"the only GPU the report names is {vendor}'s ({other.name}), and CUDA runs on "
                   "NVIDIA GPUs only: there is no CUDA-capable GPU here, whatever the driver",
                   dedupe([ctx.quote(failed[0]), other.quote]), NAMED + 5,
                   [Remedy(summary="This needs an NVIDIA GPU (CUDA): run it on a machine or cloud "
                           "instance with one, or on the CPU where the program offers that"
                           + (" (on AMD GPUs, a ROCm build of torch on Linux)" if vendor == "AMD"
                              else "") + ".", commands=["nvidia-smi"])])]


# the same words from a Mac, which has no NVIDIA GPU (Apple silicon's GPU runs Metal/MPS; the
# last Macs with NVIDIA GPUs and drivers date from 2013-2014): "no CUDA device found"
_NO_DEVICE = re.compile(r"no CUDA (?:device|GPU)s? (?:was |were )?(?:found|detected|available)|"
                        r"CUDA is not available|No CUDA GPUs are available|Torch not compiled "
                        r"with CUDA enabled", re.I)


def mac_without_cuda(ctx: Context) -> List[Signal]:
    if any(g.vendor == "nvidia" for g in ctx.seen.gpus):
        return []
    failed = ctx.first(_NO_DEVICE, ("cuda",))
    mac = next((i for i, line in enumerate(ctx.text.lines[:400]) if MAC.search(line)), None)
    if failed is None or mac is None:
        return []
    return [Signal("mac_without_cuda", Category.PLATFORM_UNSUPPORTED,
                   "this runs on a Mac, which has no NVIDIA GPU: CUDA code (and the libraries "
                   "built on it: flash-attn, bitsandbytes' CUDA kernels, Triton, Unsloth) cannot "
                   "run there", dedupe([ctx.quote(failed[0]), ctx.quote(mac)]), NAMED,
                   [Remedy(summary="On the Mac, use tools written for Apple silicon (PyTorch's "
                           "MPS device, MLX / mlx-lm, llama.cpp or Ollama); for the CUDA code "
                           "itself, a Linux machine or cloud instance with an NVIDIA GPU "
                           "(Colab, Kaggle).")])]
