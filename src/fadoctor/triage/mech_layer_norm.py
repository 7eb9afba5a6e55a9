"""flash-attention's fused dropout-add-LayerNorm extension (csrc/layer_norm, dropout_layer_norm)
finding no kernel for the call: "FWD: Unsupported hidden_size or types: 5120BFloat16FloatFloat
FloatFloat" prints the hidden size, then the weight, input, residual, output and compute dtypes
(c10 prints Float, Half, BFloat16). Each kernel is registered for one hidden size and dtype
combination: Dao-AILab/flash-attention@v2.8.3:csrc/layer_norm/ln_api.cpp:66 (the check),
ln_fwd_<N>.cu REGISTER_FWD_LAUNCHER (the same 10 combinations in all 42 files; hidden sizes 256
to 8192, unchanged since v1.0.0) (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, NAMED, Signal

SOURCE = "Dao-AILab/flash-attention@v2.8.3:csrc/layer_norm/ln_api.cpp:66, ln_fwd_*.cu"
_UNSUPPORTED = re.compile(r"(FWD|BWD): Unsupported hidden_size or types: (\d{1,6})"
                          r"((?:BFloat16|Half|Float|Double){5})")
_TYPE = re.compile(r"BFloat16|Half|Float|Double")
SIZES = (256, 512, 768, 1024, 1280, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192)
_F, _H, _B = "Float", "Half", "BFloat16"
# (weight, input, residual, output, compute), REGISTER_FWD_LAUNCHER's order
COMBOS = ((_F, _F, _F, _F, _F), (_H, _F, _F, _F, _F), (_F, _H, _F, _H, _F), (_H, _H, _F, _H, _F),
          (_F, _H, _H, _H, _F), (_F, _B, _F, _B, _F), (_B, _B, _F, _B, _F), (_F, _B, _B, _B, _F),
          (_H, _H, _H, _H, _F), (_B, _B, _B, _B, _F))
_NAME = {_F: "float32", _H: "float16", _B: "bfloat16", "Double": "float64"}
_TRITON = ("or use the Triton LayerNorm that takes any size and dtype "
           "(flash_attn.ops.triton.layer_norm), or turn the fused LayerNorm off in the model's "
           "config (fused_dropout_add_ln=False)")


def unsupported(ctx: Context) -> List[Signal]:
    hit = ctx.first(_UNSUPPORTED, ("unsupported hidden_size",))
    if hit is None:
        return []
    size, types = int(hit[1].group(2)), tuple(_TYPE.findall(hit[1].group(3)))
    weight, given = types[0], types[1]
    if size not in SIZES:
        return [Signal("layer_norm", Category.KERNEL_FAILURE,
                       f"flash-attention's fused LayerNorm has kernels for hidden sizes "
                       f"{', '.join(map(str, SIZES))} only; this model's is {size}",
                       [ctx.quote(hit[0])], NAMED,
                       [Remedy(summary=f"Hidden size {size} has no fused kernel: {_TRITON}.")],
                       details={"source": SOURCE})]
    inputs = sorted({_NAME[c[1]] for c in COMBOS if c[0] == weight})
    return [Signal("layer_norm", Category.DTYPE_UNSUPPORTED,
                   f"flash-attention's fused LayerNorm has no kernel for a {_NAME.get(weight)} "
                   f"weight with {_NAME.get(given)} input (hidden size {size}): the weight and "
                   "the input must be of matching dtypes (a float32 weight takes any input)",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Cast the input to the weight's dtype before the call (a "
                           f"{_NAME.get(weight)} weight takes {' or '.join(inputs)} input: "
                           f"x.to(torch.{_NAME.get(weight)}), or load the whole model in one "
                           "dtype, torch_dtype=torch.bfloat16), or keep the LayerNorm weight in "
                           f"float32; {_TRITON}.")],
                   details={"source": SOURCE})]


# flash-attention's optional extensions on AMD: each csrc/<ext>/setup.py builds a CUDAExtension
# with nvcc flags only (Dao-AILab/flash-attention@v2.8.3:csrc/layer_norm/setup.py:115); the ROCm
# support covers flash_attn itself. Triton versions of the same ops run there
# (flash_attn/ops/triton/layer_norm.py, rotary.py, cross_entropy.py at v2.8.3).
_CSRC = re.compile(r"\bcsrc[/\\](layer_norm|rotary|fused_dense_lib|xentropy|fused_softmax)\b|"
                   r"\b(dropout_layer_norm|rotary_emb|fused_dense_lib|xentropy_cuda_lib)\b")
_AMD = re.compile(r"\bROCm\b|\bAMD\b|\bMI[123]\d{2}X?\b|\bgfx\d{3,4}\b|\bHIP\b")
_TRITON_OPS = {"layer_norm": "layer_norm", "dropout_layer_norm": "layer_norm", "rotary": "rotary",
               "rotary_emb": "rotary", "xentropy": "cross_entropy",
               "xentropy_cuda_lib": "cross_entropy"}


def csrc_on_rocm(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CSRC, ("csrc", "dropout_layer_norm", "rotary_emb", "fused_dense_lib",
                            "xentropy"))
    amd = ctx.first(_AMD, ("rocm", "amd", "mi", "gfx", "hip")) if hit is not None else None
    if hit is None or amd is None:
        return []
    name = hit[1].group(1) or hit[1].group(2)
    op = _TRITON_OPS.get(name)
    return [Signal("csrc_rocm", Category.ROCM,
                   f"flash-attention's optional {name} extension is CUDA-only: its setup.py builds "
                   "with nvcc, and flash-attention's ROCm support covers flash_attn itself",
                   [ctx.quote(hit[0])], HINTED,
                   [Remedy(summary="On ROCm use the Triton version of the op, which runs there: "
                           + (f"flash_attn.ops.triton.{op}" if op else "flash_attn.ops.triton's "
                              "layer_norm, rotary and cross_entropy")
                           + " (installed with flash-attn itself); or the model's plain PyTorch "
                           "layer (models fall back without the extension).")],
                   details={"source": "Dao-AILab/flash-attention@v2.8.3:csrc/layer_norm/setup.py:115,"
                                      " flash_attn/ops/triton/"})]
