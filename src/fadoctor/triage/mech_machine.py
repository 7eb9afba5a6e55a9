"""What the machine itself is or has lost, told by a report (pure):
- an accelerator that is not an NVIDIA GPU (a TPU, an Intel GPU) under a stack whose kernels are
  CUDA-only (Unsloth, flash-attn, bitsandbytes, xformers, vLLM, SageAttention, Triton's CUDA
  backend), or such a library's own "you need a GPU";
- a shared library the loader maps as "(deleted)": the file was removed from the environment
  while a process had it open (a reinstall or removal underneath it; Linux marks such mappings so
  in /proc/PID/maps), so the environment no longer holds the package's own files;
- the NVIDIA driver said to be too old ("driver version is too low") with the driver stated;
- the AMDGPU assembler's "instruction not supported on this GPU": code using instructions of
  other gfx targets, compiled for this one."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, LOGGED, NAMED, Signal, dedupe

_OTHER = re.compile(r"\bTPU\b|\bIntel\(?R?\)? (?:Iris|Arc|UHD|HD Graphics)|\bIris\(?R?\)? Xe\b|"
                    r"\bIntel Arc\b|\bXPU\b|\bno dedicated NVIDIA GPU\b|\bwithout (?:an? )?"
                    r"NVIDIA\b|\bdo(?:es)? not have (?:an? )?(?:dedicated )?NVIDIA", re.I)
_CUDA_ONLY = re.compile(r"\b(?:unsloth|flash[-_ ]?attn|flash[-_ ]attention|bitsandbytes|xformers|"
                        r"vllm|sageattention|deepspeed|cuda)\b", re.I)
# Unsloth's own: "Unsloth cannot find any torch accelerator? You need a GPU."
# (unslothai/unsloth unsloth/__init__.py, NotImplementedError)
_NEED_GPU = re.compile(r"cannot find any torch accelerator|\bYou need a GPU\b|No NVIDIA GPU found",
                       re.I)


def non_nvidia(ctx: Context) -> List[Signal]:
    other = ctx.first(_OTHER, ("tpu", "intel", "iris", "arc", "xpu", "nvidia"))
    need = ctx.first(_NEED_GPU, ("torch accelerator", "need a gpu"))
    stack = ctx.first(_CUDA_ONLY, ("unsloth", "flash", "bitsandbytes", "xformers", "vllm", "sage",
                                   "deepspeed", "cuda"))
    if ctx.amd or ctx.gpu is not None or (other is None and need is None) or (
            other is not None and stack is None and need is None):
        return []
    quotes = dedupe([ctx.quote(i) for i in (other and other[0], need and need[0],
                                            stack and stack[0]) if i is not None])
    fixes = [Remedy(summary="Run it on an NVIDIA GPU: in Colab or Kaggle, a GPU runtime (Runtime "
                    "> Change runtime type > T4 GPU); locally or in the cloud, a machine with an "
                    "NVIDIA card and its driver. These kernels are CUDA-only."),
             Remedy(summary="Or without the CUDA-only libraries: plain transformers/PEFT training "
                    "on the CPU (slow), or a stack that supports this accelerator.")]
    if other is None:
        return [Signal("no_gpu_for_stack", Category.NO_GPU,
                       "the library found no GPU to run on: torch sees no CUDA device here",
                       quotes, LOGGED,
                       [Remedy(summary="If this machine has an NVIDIA GPU, torch does not see it: "
                               "a CPU-only torch build (torch.version.cuda is None) or no driver. "
                               "Install the CUDA build of torch for your driver.",
                               commands=["fadoctor fix --print-pins"]), *fixes])]
    return [Signal("no_gpu_for_stack", Category.PLATFORM_UNSUPPORTED,
                   "this machine's accelerator is not an NVIDIA GPU, and the stack named runs "
                   "CUDA kernels only", quotes, NAMED if need else HINTED, fixes)]


_DELETED = re.compile(r"([^\s'\"]{0,300}/site-packages/([A-Za-z_][\w.-]{0,80}?)(?:\.libs)?/"
                      r"[^\s'\"]{1,200}) \(deleted\)")


def deleted_library(ctx: Context) -> List[Signal]:
    hit = ctx.first(_DELETED, ("(deleted)",))
    if hit is None:
        return []
    package = nvidia_dist(hit[1].group(1)) or hit[1].group(2).replace("_", "-")
    return [Signal("deleted_library", Category.NOT_INSTALLED,
                   f"{hit[1].group(1).rsplit('/', 1)[-1]} was deleted from the environment while "
                   f"in use: {package}'s own files are gone (a reinstall or removal ran under a "
                   "live process, or the environment was changed from elsewhere)",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Reinstall {package} (and torch with it, when it is one of "
                           "torch's companions) into this environment, then restart the "
                           "process; if more is broken, recreate the environment.",
                           commands=[f"pip install --force-reinstall --no-deps {package}"])])]


_NVIDIA_LIB = re.compile(r"site-packages/nvidia/(\w+)/lib/[^\s/]+\.so\.(\d+)")


def nvidia_dist(path: str) -> Optional[str]:
    """The pip distribution of a CUDA library under site-packages/nvidia/ (nvidia/cublas/lib/
    libcublas.so.12 is nvidia-cublas-cu12; CUDA 13's wheels dropped the -cuXX suffix:
    nvidia-cuda-runtime==13.0.96)."""
    found = _NVIDIA_LIB.search(path)
    if found is None:
        return None
    major = int(found.group(2))
    folder = found.group(1).replace("_", "-")
    return f"nvidia-{folder}" + (f"-cu{major}" if major <= 12 else "")


_SAID_OLD = re.compile(r"\bdriver(?: version)?[^\n.]{0,40}\b(?:is )?too (?:low|old)\b|"
                       r"\bold(?:er)? (?:nvidia )?driver\b", re.I)


def driver_said_old(ctx: Context) -> List[Signal]:
    said = ctx.first(_SAID_OLD, ("too low", "too old", "old driver", "older driver"))
    if said is None or ctx.driver is None:
        return []
    floor = ctx.matrix.driver_floor(12)
    if floor is None or ctx.driver >= floor.min_driver:
        return []
    return [Signal("driver_said_old", Category.DRIVER_TOO_OLD,
                   f"the NVIDIA driver here ({ctx.driver}) is older than CUDA 12 needs "
                   f"({floor.min_driver}), and the report says the driver is too old: a CUDA 12 "
                   "build of the stack cannot run on it",
                   dedupe([ctx.quote(said[0]), *ctx.quotes("driver")]), HINTED,
                   [Remedy(summary=f"Upgrade the NVIDIA driver to {floor.min_driver} or newer "
                           "(the host's driver, for a container or a cluster node); or use a "
                           "build of the stack for the CUDA this driver supports.")],
                   details={"source": floor.source})]


# LLVM's AMDGPU assembler: "error: instruction not supported on this GPU" (inline asm of another
# gfx target compiled for this one)
_AMDGPU = re.compile(r"error: instruction not supported on this GPU")
_GFX = re.compile(r"\bgfx\d{3,4}[a-z]?\b")


def amdgpu_instruction(ctx: Context) -> List[Signal]:
    hit = ctx.first(_AMDGPU, ("instruction not supported on this gpu",))
    if hit is None:
        return []
    gfx = ctx.first(_GFX, ("gfx",))
    target = gfx[1].group(0) if gfx else "this GPU's gfx target"
    return [Signal("amdgpu_instruction", Category.ROCM,
                   f"the ROCm build compiles kernels with instructions {target} does not have: "
                   "the code targets newer AMD GPUs (its inline assembly)",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(gfx[0])] if gfx else [])]), NAMED,
                   [Remedy(summary="Build only for this GPU (PYTORCH_ROCM_ARCH=<its gfx>, from "
                           "rocminfo) where the project guards those kernels by target; otherwise "
                           "this GPU is not supported by the project's ROCm kernels: use a "
                           "supported GPU (see the project's ROCm support list) or its non-ROCm "
                           "fallback.")])]


def cuda_build_on_rocm(ctx: Context, index: int, package: Optional[str]) -> Optional[Signal]:
    """A build asking for CUDA_HOME on an AMD ROCm machine: the package's kernels are CUDA's."""
    if "cuda_home" not in ctx.low(index) or not (ctx.amd or ctx.text.containing(("rocm",))):
        return None
    who = package or "this package"
    return Signal("nvcc_missing", Category.ROCM,
                  f"{who}'s build needs CUDA (its setup.py looks for CUDA_HOME), and this is an "
                  "AMD ROCm machine: its CUDA kernels do not build for ROCm",
                  dedupe([ctx.quote(index), *ctx.quotes("rocm")]), NAMED,
                  [Remedy(summary=f"Use {who}'s ROCm or Triton path if it has one (its README; a "
                          "ROCm fork), else an attention that runs on ROCm: PyTorch SDPA, or "
                          "flash-attn's ROCm build.")])


# x86-only compiler options on another architecture: "g++: error: unrecognized command line
# option '-mavx2'" (gcc accepts -mavx, -mavx2, -mf16c, -mfma, -msse4.2 only when targeting x86;
# clang on Apple silicon: "unsupported option '-mavx2' for target 'arm64-apple-darwin'")
_X86_FLAG = re.compile(r"(?:unrecognized command[- ]line option|unsupported option) ['\u2018\"]?"
                       r"(-m(?:avx\w*|f16c|fma|sse[\w.]*|bmi2?))")


def x86_flags(ctx: Context) -> List[Signal]:
    hit = ctx.first(_X86_FLAG, ("option",))
    if hit is None:
        return []
    return [Signal("x86_flags", Category.PLATFORM_UNSUPPORTED,
                   f"the build passes {hit[1].group(1)}, an x86-64 instruction-set option, and this "
                   "machine is not x86-64 (ARM: aarch64, or Apple silicon): this release of the "
                   "package builds for x86-64 only", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Use a release of the package that supports ARM (its release "
                           "notes, or prebuilt aarch64 wheels on the index), or build and run "
                           "it on an x86-64 machine; removing the flags from its build files "
                           "only helps where the code has a non-x86 path.")])]
