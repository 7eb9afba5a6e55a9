"""Apple's MPS backend (and Microsoft's DirectML) refusing a dtype, in torch's own words
(aten/src/ATen/mps/EmptyTensor.cpp:
TORCH_CHECK_TYPE(dtype != Double, MPS_ERROR_DOUBLE_NOT_SUPPORTED): "Cannot convert a MPS Tensor
to float64 dtype as the MPS framework doesn't support float64. Please use float32 instead."; and
"MPS BFloat16 is only supported on MacOS 14 or newer"). A library that creates float64 tensors
(a RoPE table, numpy's default) fixes it for MPS in a later release. And a Mac's loader refusing
a binary of the other architecture (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import dist_of, frame_package
from fadoctor.triage.signal import NAMED, Signal, dedupe
from fadoctor.triage.stated_fix import installable

_FLOAT64 = re.compile(r"Cannot convert a MPS Tensor to float64 dtype|MPS framework doesn't "
                      r"support float64")
_BF16 = re.compile(r"MPS BFloat16 is only supported on MacOS 14")
# getMPSDataType's refusal of any other dtype (aten/src/ATen/native/mps/OperationUtils.mm:
# "Trying to convert ", scalar_type, " to the MPS backend but it does not have support for that
# dtype."): Float8_e4m3fn, ComplexDouble, …
_CONVERT = re.compile(r"Trying to convert (\w+) to the MPS backend but it does not have support")
# the older torch's refusal of bf16 on MPS altogether (getMPSDataType's TORCH_CHECK_TYPE)
_BF16_NONE = re.compile(r"BFloat16 is not supported on MPS")
# Accelerate's bf16 check (accelerator.py): "bf16 mixed precision requires PyTorch >= 1.10 and a
# supported device" when is_bf16_available() is false; its later releases take MPS and say "bf16
# mixed precision with MPS device requires a Pytorch >= 2.6.0"
_ACCEL = re.compile(r"bf16 mixed precision requires PyTorch >= 1\.10 and a supported device|"
                    r"bf16 mixed precision with MPS device requires a Pytorch >= ([\d.]+)")
_ON_MPS = re.compile(r"\bmps\b|apple silicon|\bm[1-4] (?:pro|max|ultra)\b|macos", re.I)
_NAMED_LIB = re.compile(r"\b(diffusers|transformers|accelerate|whisper|docling|ultralytics)\b")


def dtype(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FLOAT64, ("mps",))
    if hit is not None:
        lib = _library(ctx, hit[0])
        fixes = [Remedy(summary="MPS has no float64: the tensor must be float32 before it moves "
                        "to the GPU (.float(), or torch_dtype=torch.float32 / bfloat16); if the "
                        "float64 is created inside a library, its fix for MPS is in a later "
                        "release" + (f": upgrade {lib}." if lib else "."),
                        commands=[command("pip", "install", "--upgrade", lib)] if lib else []),
                 Remedy(summary="Or run that step on the CPU (device=\"cpu\"), which has float64.")]
        return [Signal("mps_float64", Category.DTYPE_UNSUPPORTED,
                       "Apple's MPS backend has no float64, and the code moves a float64 tensor "
                       "to it", dedupe([ctx.quote(hit[0])]), NAMED, fixes)]
    accel = ctx.first(_ACCEL, ("bf16 mixed precision",))
    on_mps = accel is not None and ctx.first(_ON_MPS, ("mps", "apple", "macos", " m1", " m2",
                                                       " m3", " m4")) is not None
    if accel is not None and not on_mps and not accel[1].group(1) \
            and (ctx.torch is None or ctx.torch >= Version("1.10")) \
            and (ctx.gpu_cc is None or ctx.gpu_cc < Version("8.0")):
        # is_bf16_available() is false on a CUDA GPU below compute capability 8.0 (torch's
        # is_bf16_supported), e.g. Colab's T4, a V100, a Pascal card
        gpu = f" ({ctx.gpu[0]}, compute capability {ctx.gpu_cc})" if ctx.gpu else ""
        return [Signal("bf16_device", Category.DTYPE_UNSUPPORTED,
                       f"Accelerate refuses bf16 mixed precision: this GPU{gpu} has no bf16 "
                       "support (torch.cuda.is_bf16_supported() is false below compute "
                       "capability 8.0: T4, V100, Pascal)",
                       dedupe([ctx.quote(accel[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                       [Remedy(summary="Train in fp16 on this GPU: mixed_precision=\"fp16\" "
                               "(and save_precision=\"fp16\"), or \"no\" (fp32); bf16 needs an "
                               "Ampere or newer GPU (A100, RTX 30xx, L4).")])]
    if on_mps and accel is not None:
        need = accel[1].group(1) or "2.6.0"
        return [Signal("mps_bf16_amp", Category.PLATFORM_UNSUPPORTED,
                       "Accelerate's bf16 mixed precision on Apple's MPS needs a release of "
                       f"Accelerate that takes MPS and torch {need} or newer",
                       [ctx.quote(accel[0])], NAMED,
                       [Remedy(summary=f"Upgrade torch to {need} or newer and Accelerate (its "
                               "later releases accept bf16 on MPS).",
                               commands=[command("pip", "install", "--upgrade",
                                                 f"torch>={need}", "accelerate")]),
                        Remedy(summary="Or train without bf16 on this Mac: "
                               "mixed_precision=\"no\" (fp32), or fp16.")])]
    other = ctx.first(_CONVERT, ("to the mps backend",))
    if other is not None and other[1].group(1) not in ("BFloat16", "Double"):
        kind = other[1].group(1)
        return [Signal("mps_dtype", Category.DTYPE_UNSUPPORTED,
                       f"torch's MPS backend has no {kind}: the model's weights (an fp8 checkpoint) "
                       "or the code ask for a dtype Apple GPUs do not run", [ctx.quote(other[0])],
                       NAMED, [Remedy(summary=f"On the Mac, load a checkpoint in a dtype MPS runs: "
                                      "the fp16 (float16) or bf16 release of the model instead of "
                                      f"its {kind} one, or a GGUF quantization (Q8) through a "
                                      "GGUF loader; or cast to torch.float16 before .to(\"mps\").")])]
    none = ctx.first(_BF16_NONE, ("bfloat16 is not supported on mps",))
    if none is not None:
        return [Signal("mps_bf16", Category.DTYPE_UNSUPPORTED,
                       "this torch's MPS backend has no bfloat16 at all: the model or its config "
                       "asks for bf16 on an Apple GPU", [ctx.quote(none[0])], NAMED,
                       [Remedy(summary="Run in float16 on the Mac (torch_dtype=torch.float16; a "
                               "model config's bf16 flag set to false and fp16 to true), or "
                               "float32; a newer torch runs bf16 on MPS from macOS 14.")])]
    hit = ctx.first(_BF16, ("mps bfloat16",))
    if hit is None:
        return []
    return [Signal("mps_bf16", Category.PLATFORM_UNSUPPORTED,
                   "torch's MPS backend runs bfloat16 only on macOS 14 or newer",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Upgrade macOS to 14 or newer, or use float16 / float32 on "
                           "this Mac (torch_dtype=torch.float16, mixed_precision=\"fp16\" or "
                           "\"no\").", commands=["sw_vers"])])]


def _library(ctx: Context, index: int) -> Optional[str]:
    """The package whose frame is nearest above the error, else one the report names."""
    framed = frame_package(ctx, index, ("torch", "numpy"))
    if framed is not None:
        return framed
    named = ctx.first(_NAMED_LIB, ("diffusers", "transformers", "accelerate", "whisper",
                                   "docling", "ultralytics"))
    return named[1].group(1) if named else None


# An Intel (x86_64) Python on an Apple Silicon Mac, running under Rosetta 2: its torch is the
# macOS x86_64 build, which has no MPS backend (torch.backends.mps.is_available() needs macOS on
# arm64: torch's "MPS backend" notes), and platform.machine() / platform.processor() say x86_64 /
# i386 instead of arm64. An Anaconda installed from the Intel installer does it to every env.
_APPLE_SILICON = re.compile(r"\bM[1-5](?: (?:Pro|Max|Ultra))?\b(?! ?\.\d)|apple silicon", re.I)
_INTEL_PYTHON = re.compile(r"\b(?:i386|x86_64|rosetta|osx-64|macosx_\d+_\d+_x86_64)\b", re.I)
_MPS_MISSING = re.compile(r"\bmps\b[^\n]{0,80}\b(?:not available|unavailable|False)\b|"
                          r"MPSAccelerator can not run|mps\.is_available\(\)[^\n]{0,20}False", re.I)


def rosetta(ctx: Context) -> List[Signal]:
    missing = ctx.first(_MPS_MISSING, ("mps",))
    chip = ctx.first(_APPLE_SILICON, ("m1", "m2", "m3", "m4", "m5", "apple silicon"))
    intel = ctx.first(_INTEL_PYTHON, ("i386", "x86_64", "rosetta", "osx-64"))
    if missing is None or chip is None or intel is None:
        return []
    return [Signal("rosetta_python", Category.WRONG_WHEEL,
                   "an Intel (x86_64) Python runs under Rosetta on this Apple Silicon Mac: its "
                   "torch is the x86_64 macOS build, which has no MPS backend",
                   dedupe([ctx.quote(missing[0]), ctx.quote(chip[0]), ctx.quote(intel[0])]), NAMED,
                   [Remedy(summary="Install a native arm64 Python (Miniforge's or python.org's "
                           "arm64 / universal2 installer; an Anaconda installed with the Intel "
                           "installer makes every environment x86_64), create the environment "
                           "again and reinstall torch there; this must print arm64:",
                           commands=[command("python", "-c",
                                             "import platform; print(platform.machine())")])])]


# torch-directml's refusal (the string in torch_directml_native.pyd of torch-directml
# 0.2.5.dev240914): DirectML devices (Intel Arc, AMD, NVIDIA on Windows through DirectX 12) may
# have no float64, and printing a tensor or .numpy() converts through it.
_DML_DOUBLE = re.compile(r"The GPU device does not support Double \(Float64\) operations")


def directml_float64(ctx: Context) -> List[Signal]:
    hit = ctx.first(_DML_DOUBLE, ("does not support double",))
    if hit is None:
        return []
    return [Signal("directml_float64", Category.DTYPE_UNSUPPORTED,
                   "this DirectML device has no float64 (Double), and the code runs a float64 "
                   "operation on it (printing a tensor or .numpy() converts through one)",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Keep tensors on the DirectML device in float32 (.float(); "
                           "torch.set_default_dtype(torch.float32) where numpy hands over "
                           "float64), and copy a tensor to the CPU before printing it or calling "
                           ".numpy(): t.to(\"cpu\"), which has float64.")])]


# dyld refusing a Mach-O file of the other architecture: "mach-o file, but is an incompatible
# architecture (have 'arm64', need 'x86_64')" (older macOS: "(have (arm64), need (x86_64h))").
# torch's macOS x86_64 wheels end at 2.2.2 (the package index lists none later for
# macosx_*_x86_64; arm64 wheels go on).
_MACHO = re.compile(r"incompatible architecture \(have \(?'?(\w+)'?\)?, need \(?'?(\w+)'?\)?")
_SITE_PACKAGE = re.compile(r"(?:site-packages|python_dependencies)/([A-Za-z_][\w]{0,40})/")


def mac_arch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MACHO, ("incompatible architecture",))
    if hit is None:
        return []
    have, need = hit[1].group(1), hit[1].group(2)
    package = _SITE_PACKAGE.search(ctx.text.lines[hit[0]])
    name = package.group(1) if package else "the package"
    dist = dist_of(name) if package and installable(dist_of(name)) else None
    quotes = [ctx.quote(hit[0])]
    if have.startswith("arm64") and need.startswith("x86_64"):
        chip = ctx.first(_APPLE_SILICON, ("m1", "m2", "m3", "m4", "m5", "apple silicon"))
        if chip is not None:  # an x86_64 Python under Rosetta on an Apple Silicon Mac
            return [Signal("mac_arch", Category.WRONG_WHEEL,
                           f"{name}'s binary is arm64 but this Python runs as x86_64 (under "
                           "Rosetta on this Apple Silicon Mac)", dedupe([*quotes, ctx.quote(
                               chip[0])]), NAMED,
                           [Remedy(summary="Run a native arm64 Python (Miniforge's or "
                                   "python.org's arm64 / universal2 installer) and reinstall the "
                                   "packages there; this must print arm64:",
                                   commands=[command("python", "-c", "import platform; "
                                                     "print(platform.machine())")])])]
        return [Signal("mac_arch", Category.PLATFORM_UNSUPPORTED,
                       f"{name}'s binary is built for Apple Silicon (arm64) only, and this Mac "
                       "(or its Python) is Intel x86_64: that build does not support Intel Macs",
                       quotes, NAMED,
                       [Remedy(summary="On an Intel Mac, install the package's x86_64 build if it "
                               "has one (torch's macOS x86_64 wheels end at 2.2.2), or run it on "
                               "an Apple Silicon Mac, Linux or Windows: this build is not "
                               "supported on Intel Macs.")])]
    if have.startswith("x86_64") and need.startswith("arm64"):
        return [Signal("mac_arch", Category.WRONG_WHEEL,
                       f"{name}'s binary is x86_64 but this Python is arm64 (Apple Silicon): an "
                       "Intel build was installed (a wheel or cache from an Intel Mac or a "
                       "Rosetta environment)", quotes, NAMED,
                       [Remedy(summary=f"Reinstall {name}'s arm64 build in this environment, "
                               "without the cache that holds the x86_64 one.",
                               commands=[command("pip", "install", "--force-reinstall",
                                                 "--no-cache-dir", dist)] if dist else [])])]
    return []


# dyld given a Linux (ELF) library: "... fbgemm_gpu_py.so' (not a mach-o file)": a package whose
# compiled part exists for Linux only, installed on a Mac (a Linux wheel copied in, or a sdist
# whose build produced no macOS binary)
_NOT_MACHO = re.compile(r"\(not a mach-o file\)")


def linux_binary_on_mac(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NOT_MACHO, ("not a mach-o file",))
    if hit is None:
        return []
    package = _SITE_PACKAGE.search(ctx.text.lines[hit[0]])
    name = package.group(1) if package else "the package"
    return [Signal("mac_arch", Category.PLATFORM_UNSUPPORTED,
                   f"{name}'s compiled library is a Linux (ELF) binary, not a macOS one: the "
                   "package has no macOS build to install", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Run {name} on Linux (a Linux machine, a container, or a "
                           "cloud instance; on Windows, WSL): it is not supported on macOS.")])]


# MPS's allocator refusing past its high watermark: "MPS backend out of memory (MPS allocated:
# 8.89 GB, other allocations: ..., max allowed: 9.07 GB) ... Use
# PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations" (torch's
# aten/src/ATen/mps/MPSAllocator.mm). The limit is a ratio of the Mac's recommended working set,
# not the memory the system has: lifting it trades the error for swapping.
_MPS_OOM = re.compile(r"MPS backend out of memory \(MPS allocated: ([\d.]+ [KMG]B)[^\n]{0,80}?max "
                      r"allowed: ([\d.]+ [KMG]B)\)")


def mps_watermark(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MPS_OOM, ("mps backend out of memory",))
    if hit is None:
        return []
    return [Signal("mps_watermark", Category.OUT_OF_MEMORY,
                   f"MPS's allocator stopped at its high watermark ({hit[1].group(2)} allowed, "
                   f"{hit[1].group(1)} allocated): a limit torch sets from the Mac's recommended "
                   "working set, not the memory the system has", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Raise or lift the limit for this process "
                           "(PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 lifts it; macOS then swaps "
                           "instead of failing), or lower the work's size (resolution, batch).",
                           commands=["export PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0"])],
                   details={"source": "pytorch/pytorch aten/src/ATen/mps/MPSAllocator.mm"})]


# torch's fallback for an operator with no MPS kernel: "The operator 'aten::roll' is not currently
# implemented for the MPS device. ... As a temporary fix, you can set the environment variable
# `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op." (pytorch/pytorch
# aten/src/ATen/mps/MPSFallback.mm); releases add MPS kernels op by op (pytorch/pytorch#77764)
_NO_MPS_OP = re.compile(r"operator \\?['\u2018`]?(aten::\w{1,60}(?:\.\w{1,40})?)\\?['\u2019`]? is not "
                        r"currently implemented for the MPS device")


def missing_op(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_MPS_OP, ("not currently implemented for the mps device",))
    if hit is None:
        return []
    op = hit[1].group(1)
    torch = f" {ctx.torch}" if ctx.torch else ""
    return [Signal("mps_missing_op", Category.PLATFORM_UNSUPPORTED,
                   f"this torch{torch} has no MPS (Apple GPU) kernel for {op}: the model runs on "
                   "the Mac's GPU until it reaches that operator",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED,
                   [Remedy(summary=f"Let torch run {op} on the CPU and the rest on the GPU: set "
                           "PYTORCH_ENABLE_MPS_FALLBACK=1 before starting Python (torch's own "
                           "message says so; slower for that operator).",
                           commands=["export PYTORCH_ENABLE_MPS_FALLBACK=1"]),
                    Remedy(summary="Or upgrade torch: releases add MPS kernels operator by "
                           "operator (pytorch/pytorch#77764 tracks them), so a newer one may run "
                           f"{op} on the GPU.",
                           commands=[command("pip", "install", "--upgrade", "torch")])],
                   details={"source": "pytorch/pytorch aten/src/ATen/mps/MPSFallback.mm"})]
