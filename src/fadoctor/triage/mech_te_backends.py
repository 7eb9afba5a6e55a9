"""Transformer Engine finding no attention backend for the inputs ("No dot product attention
backend is available for the provided inputs"): its debug log says why it turned each backend
off ("Disabling FlashAttention 2 as it does not support MLA", "Disabling FusedAttention as no
backend supports the provided input"; NVIDIA/TransformerEngine@v2.8:transformer_engine/pytorch/
attention/dot_product_attention/utils.py:386-920, with NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2). The
reasons name the cause; cuDNN's fused attention refusing the inputs is lifted by a newer cuDNN
where the shape is one cuDNN added later (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, NAMED, Signal, dedupe

SOURCE = ("NVIDIA/TransformerEngine@v2.8:transformer_engine/pytorch/attention/dot_product_attention/"
          "utils.py:386-920; dot_product_attention.py:1357")
_NONE = re.compile(r"No dot product attention backend is available for the provided inputs")
_DISABLING = re.compile(r"Disabling (FlashAttention(?: \d)?|FusedAttention|UnfusedDotProductAttention"
                        r"|all backends) (?:as|for|due to) ([^\n]{3,200})")
_CUDNN = re.compile(r"'cudnn_version': '(\d+\.\d+(?:\.\d+)?)'")
# (test on the reasons, category): the first that matches wins
_KINDS: Tuple[Tuple[str, Category], ...] = (
    (r"NVTE_\w+=0", Category.VERSION_CONFLICT),
    (r"head_dim|MLA|num_heads", Category.HEAD_DIM_UNSUPPORTED),
    (r"compute capability|sm\d{2,3}|arch", Category.GPU_UNSUPPORTED),
    (r"qkv_dtype|FP8", Category.DTYPE_UNSUPPORTED),
)


def no_backend(ctx: Context) -> List[Signal]:
    none = ctx.first(_NONE, ("no dot product attention backend",))
    if none is None:
        return []
    reasons = list(ctx.find(_DISABLING, ("disabling",)))
    text = " ".join(m.group(2) for _, m in reasons)
    category = next((c for test, c in _KINDS if re.search(test, text)), None)
    if category is None:
        return []
    fused = any(m.group(1) == "FusedAttention" and "no backend supports" in m.group(2)
                for _, m in reasons)
    quotes = dedupe([ctx.quote(none[0]), *(ctx.quote(i) for i, _ in reasons[:4])])
    said = "; ".join(f"{m.group(1)}: {m.group(2).rstrip('.')}" for _, m in reasons[:4])
    return [Signal("te_backends", category,
                   f"Transformer Engine turned every attention backend off for these inputs ({said})",
                   quotes, LOGGED, _fixes(ctx, fused), details={"source": SOURCE})]


def _fixes(ctx: Context, fused: bool) -> List[Remedy]:
    out: List[Remedy] = []
    if fused:
        have = _cudnn(ctx)
        major = ctx.torch_cuda.major if ctx.torch_cuda is not None else 12
        out.append(Remedy(summary="cuDNN's fused attention found no engine for these inputs"
                          + (f" with cuDNN {have}" if have else "") + ": newer cuDNN releases "
                          "support more shapes and GPUs: "
                          "upgrade the cuDNN torch loads.",
                          commands=[command("pip", "install", "--upgrade",
                                            f"nvidia-cudnn-cu{major}")]))
    out.append(Remedy(summary="Or change the inputs to a form one backend supports (the 'Disabling "
                      "…' lines name each backend's limit), or install the backend TE's log says "
                      "is missing (flash-attn 3 for MLA on Hopper)."))
    return out


def _cudnn(ctx: Context) -> Optional[str]:
    found = ctx.first(_CUDNN, ("cudnn_version",))
    return found[1].group(1) if found else None


# Transformer Engine's loader (transformer_engine/common/__init__.py, _get_shared_object_file):
# "Could not find shared object file for Transformer Engine torch lib." - the core package is
# installed, its PyTorch extension (transformer_engine_torch: libtransformer_engine_torch) is not;
# TE publishes the framework bindings apart, installed by the [pytorch] extra
_NO_TORCH_LIB = re.compile(r"Could not find shared object file for Transformer Engine (torch|jax) lib")


def framework_lib_missing(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_TORCH_LIB, ("could not find shared object file for transformer engine",))
    if hit is None:
        return []
    framework = hit[1].group(1)
    extra = "pytorch" if framework == "torch" else "jax"
    return [Signal("te_framework", Category.NOT_INSTALLED,
                   f"Transformer Engine's core is installed without its {framework} extension "
                   f"(transformer_engine_{framework}): a plain `pip install transformer-engine` "
                   "brings the core only", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Install the {extra} extension of the same release, built "
                           "against the installed torch (it compiles; --no-build-isolation lets "
                           "it see that torch).",
                           commands=[command("pip", "install", "--no-build-isolation",
                                             f"transformer_engine[{extra}]")])],
                   details={"source": "NVIDIA/TransformerEngine transformer_engine/common/"
                                      "__init__.py (_get_shared_object_file)"})]
