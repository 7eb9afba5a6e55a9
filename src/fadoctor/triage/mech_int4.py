"""torch's int4 weight-only matmul on a GPU older than Ampere: `_weight_int4pack_mm` (the
"tinygemm" kernels that gpt-fast's and torchao's int4 weight-only quantization call) is compiled
only for sm_80 and newer — pytorch/pytorch aten/src/ATen/native/cuda/int4mm.cu guards its kernels
with `#if ... (CUDA_VERSION >= 12000) && (!defined(__CUDA_ARCH__) || (__CUDA_ARCH__ >= 800))` — so
on a Turing, Volta or Pascal GPU the kernel is not in torch's binary for that arch, and the run
fails ("named symbol not found", "no kernel image"). Int8 weight-only quantization has no such
floor (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_INT4 = re.compile(r"\bint4(?:pack|_weight_only|weightonly)?\b|_weight_int4pack_mm|tinygemm|"
                   r"Int4WeightOnly", re.I)
# what calls torch's own int4 kernel (not a GPTQ/AWQ checkpoint's own kernels: auto-gptq's,
# exllama's, marlin's have floors of their own)
_TORCH_INT4 = ("gpt-fast", "gpt_fast", "torchao", "tinygemm", "_weight_int4pack", "int4wo",
               "int4_weight_only", "int4weightonly")
_OTHER_INT4 = ("gptq", "awq", "exl2", "exllama", "marlin", "bitsandbytes")
_FAILED = re.compile(r"named symbol not found|no kernel image is available|invalid device function",
                     re.I)
SOURCE = "pytorch/pytorch aten/src/ATen/native/cuda/int4mm.cu (its __CUDA_ARCH__ >= 800 guard)"


def int4_before_ampere(ctx: Context) -> List[Signal]:
    gpu = ctx.gpu
    if gpu is None or gpu[1] is None or gpu[1] >= Version("8.0"):
        return []
    asked = ctx.first(_INT4, ("int4", "tinygemm"))
    failed = ctx.first(_FAILED, ("named symbol", "no kernel image", "invalid device function"))
    if asked is None or failed is None or not ctx.text.containing(_TORCH_INT4) \
            or ctx.text.containing(_OTHER_INT4):
        return []
    name, cc = gpu[0], gpu[1]
    return [Signal("int4_before_ampere", Category.GPU_UNSUPPORTED,
                   f"torch's int4 weight-only matmul (_weight_int4pack_mm, the tinygemm kernels "
                   f"int4 quantization calls) is compiled for sm_80 and newer only: {name} "
                   f"(sm_{cc.major}{cc.minor}) has no code for it",
                   dedupe([ctx.quote(failed[0]), ctx.quote(asked[0]), gpu[2]]), NAMED + 5,
                   [Remedy(summary=f"On the {name}, quantize to int8 weight-only instead (its "
                           "kernels run on any CUDA GPU), or run the model unquantized in "
                           "float16; int4 weight-only needs an Ampere (sm_80) or newer GPU, such "
                           "as an A100 or an RTX 30/40 card.")],
                   details={"source": SOURCE})]
