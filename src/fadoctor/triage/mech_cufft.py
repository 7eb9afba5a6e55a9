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

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

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
