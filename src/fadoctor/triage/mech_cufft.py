"""torch's own limits on half-precision FFTs on CUDA (aten/src/ATen/native/cuda/SpectralOps.cpp, as
in torch 1.x-2.x: "cuFFT on half requires compute capability of at least SM_53"): a half tensor on
an older GPU ("cuFFT doesn't support signals of half type with compute capability less than SM_53,
but the device containing input half tensor only has SM_52"), and a half signal whose size is not
a power of two ("cuFFT only supports dimensions whose sizes are powers of two when computing in
half precision", earlier "... with size that is not a power of two"). Speech models (mel
spectrograms through torch.stft) meet these when run in fp16 (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.install.torch import extra_index_args
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context, minor, parse_version
from fadoctor.triage.signal import GUESSED, NAMED, Signal

_OLD_GPU = re.compile(r"cuFFT doesn't support signals of half type with compute capability less "
                      r"than SM_53, but the device containing input half tensor only has "
                      r"SM_(\d)(\d)")
_POW2 = re.compile(r"cuFFT only supports dimensions whose sizes are powers of two when computing "
                   r"in half precision|cuFFT doesn't support signals of half type with size that "
                   r"is not a power of two")
_FP32 = ("Run the spectrogram / FFT in float32: turn the model's half precision off (its fp16 "
         "switch: is_half=False, fp16_run false, --fp32, or autocast disabled around "
         "torch.stft), or cast the signal with .float() before the FFT.")


def half_fft(ctx: Context) -> List[Signal]:
    old = ctx.first(_OLD_GPU, ("cufft",))
    if old is not None:
        sm = f"sm_{old[1].group(1)}{old[1].group(2)}"
        return [Signal("cufft_half", Category.GPU_UNSUPPORTED,
                       f"cuFFT computes half-precision FFTs only on compute capability 5.3 or "
                       f"newer, and this GPU is {sm} (torch's check): the model runs its FFT in "
                       "fp16", [ctx.quote(old[0])], NAMED,
                       [Remedy(summary=_FP32 + " A GPU of sm_53 or newer (Pascal or newer) runs "
                               "it in half precision.")],
                       details={"source": "pytorch/pytorch aten/src/ATen/native/cuda/"
                                          "SpectralOps.cpp (cuFFT on half requires SM_53)"})]
    pow2 = ctx.first(_POW2, ("cufft",))
    if pow2 is None:
        return []
    return [Signal("cufft_half", Category.DTYPE_UNSUPPORTED,
                   "cuFFT computes half-precision FFTs only for sizes that are powers of two, and "
                   "this signal's size is not one (torch's check)", [ctx.quote(pow2[0])], NAMED,
                   [Remedy(summary=_FP32 + " Or make n_fft (the FFT size) a power of two.")],
                   details={"source": "pytorch/pytorch aten/src/ATen/native/cuda/"
                                      "SpectralOps.cpp"})]


# cuFFT failing inside torch.stft / torch.fft on an RTX 40 (Ada, sm_89) with a torch built for CUDA
# 11.7 or older: that cuFFT has no Ada support, and torch's cu118 builds fix it
# (pytorch/pytorch#88038, "CUFFT_INTERNAL_ERROR on RTX 4090"). The same status also comes from a
# plan failing on a nearly full GPU (pytorch/pytorch#119420), so with neither the GPU nor torch's
# CUDA stated this is a guess, and with a GPU other than Ada or a CUDA from 11.8 no claim is made.
_INTERNAL = re.compile(r"cuFFT error: CUFFT_INTERNAL_ERROR")
_ADA_FIXED = Version("11.8")


_SAID = re.compile(r"\bcuFFT\b", re.I)  # "CuFFT issue with Cuda 11.7 on RTX6000 ADA"


def internal_error(ctx: Context) -> List[Signal]:
    cc, cuda = ctx.gpu_cc_exact, ctx.torch_cuda_stated
    hit = ctx.first(_INTERNAL, ("cufft_internal_error",))
    said = cuda or minor(parse_version(ctx.seen.get(o.CUDA)))  # torch's, else the CUDA said
    if hit is None and cc == Version("8.9") and said is not None and said < _ADA_FIXED:
        hit = ctx.first(_SAID, ("cufft",))  # the status cut, the GPU and CUDA said beside cuFFT
        cuda = said
    if hit is None:
        return []
    if (cc is not None and cc != Version("8.9")) or (cuda is not None and cuda >= _ADA_FIXED):
        return []
    known = cc is not None and cuda is not None
    return [Signal("cufft_ada", Category.NO_KERNEL_IMAGE,
                   "cuFFT fails inside the FFT: a torch built with CUDA 11.7 or older bundles a "
                   "cuFFT without support for RTX 40 GPUs (Ada, sm_89)" + (
                       "" if known else ", the usual cause of this status (it also comes from a "
                       "nearly full GPU)"),
                   [ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])], NAMED if known else
                   GUESSED,
                   [Remedy(summary="Install a torch built with CUDA 11.8 or later (the cu118 "
                           "wheels from torch 2.0; conda's pytorch-cuda=11.8), whose cuFFT runs on "
                           "Ada.", commands=[command("pip", "install", "torch==2.0.1",
                                                     *extra_index_args("2.0.1+cu118"))]),
                    Remedy(summary="If the GPU is not an RTX 40, or torch already uses CUDA 11.8 "
                           "or later: free GPU memory before the FFT (a smaller batch), as a plan "
                           "can fail for want of it.")],
                   details={"source": "pytorch/pytorch#88038, #119420"})]
