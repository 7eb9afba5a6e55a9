"""llama.cpp's and ollama's CUDA backend (ggml-cuda) finding no code for the GPU in a kernel:
ggml/src/ggml-cuda/common.cuh no_device_code() prints "ERROR: CUDA kernel %s has no device code
compatible with CUDA arch %d. ggml-cuda.cu was compiled for: %s" and traps. A flash-attention
kernel (flash_attn_ext_*) without code for the arch is the FA path chosen on a GPU whose variant
was not built: flash attention off; another kernel is a build without the GPU's arch (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_NO_CODE = re.compile(r"(CUDA|HIP) kernel (\w{1,80}) has no device code compatible with (?:CUDA|HIP) "
                      r"arch (\d{2,4})(?:\. ggml-cuda\.cu was compiled for: ([\d, ]{1,200}))?")
SOURCE = "ggml-org/llama.cpp ggml/src/ggml-cuda/common.cuh (no_device_code)"


def no_device_code(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_CODE, ("has no device code compatible",))
    if hit is None:
        return []
    kernel, arch, built = hit[1].group(2), hit[1].group(3), hit[1].group(4)
    sm = f"sm_{int(arch) // 10}"
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    rebuild = Remedy(summary=f"Or a llama.cpp/ollama build with code for {sm} "
                     f"(CMAKE_CUDA_ARCHITECTURES={int(arch) // 10})"
                     + (f"; this one was compiled for {built.strip()}" if built else "") + ".",
                     commands=[f"cmake -B build -DGGML_CUDA=ON "
                               f"-DCMAKE_CUDA_ARCHITECTURES={int(arch) // 10}"])
    if "flash_attn" in kernel:
        return [Signal("ggml_no_device_code", Category.GPU_UNSUPPORTED,
                       f"ggml's flash-attention kernel {kernel} has no code for {sm}: the "
                       "flash-attention path was chosen on a GPU whose variant is not built",
                       quotes, NAMED,
                       [Remedy(summary="Turn flash attention off for this GPU: ollama "
                               "OLLAMA_FLASH_ATTENTION=0 (or a release that no longer forces it "
                               "for the model), llama.cpp -fa off.",
                               commands=["export OLLAMA_FLASH_ATTENTION=0"]), rebuild],
                       details={"source": SOURCE})]
    return [Signal("ggml_no_device_code", Category.NO_KERNEL_IMAGE,
                   f"ggml's kernel {kernel} has no code for {sm}: the build's CUDA architectures "
                   "leave this GPU out", quotes, NAMED, [rebuild], details={"source": SOURCE})]
