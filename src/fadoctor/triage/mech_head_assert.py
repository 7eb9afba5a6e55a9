"""Head dims refused by a kernel's own assertion or dispatch rather than by a catalogued message:
a C assert listing the head sizes a kernel was written for (`assert(head_size == 128 ||
head_size == 256)`), and FlashInfer's dispatch failing on a head dim it has no tile
configuration for ("FlashInfer Internal Error: Invalid configuration : num_frags_x=…
num_frags_y=…", as reported in flashinfer-ai/flashinfer#528 for head dim 224 with num_frags_y=14:
head_dim / 16). A head size of
576 is DeepSeek's MLA layout (kv_lora_rank 512 + qk_rope_head_dim 64, the absorbed form), which
regular attention kernels never take: it needs an MLA kernel (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, LOGGED, Signal, dedupe

_ASSERT = re.compile(r"assert\w*\(?\s*(?:\w+\.)?head_?(?:size|dim)\w*\s*==\s*(\d+)"
                     r"((?:\s*\|\|\s*(?:\w+\.)?head_?(?:size|dim)\w*\s*==\s*\d+)*)", re.I)
_INVALID = re.compile(r"FlashInfer Internal Error: Invalid configuration\s*:\s*num_frags_x=\d+ "
                      r"num_frags_y=(\d+)")
_STATED = re.compile(r"\bhead[_ ]?(?:size|dim)\w*\s*(?:=|:|of)?\s*(\d{2,3})\b", re.I)
_MLA = 576


def head_assert(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ASSERT, ("head_size", "head_dim", "headdim", "headsize"))
    flashinfer = None if hit is not None else ctx.first(_INVALID, ("invalid configuration",))
    if hit is None and flashinfer is None:
        return []
    stated = ctx.first(_STATED, ("head",))
    dim: Optional[int] = int(stated[1].group(1)) if stated is not None else None
    if flashinfer is not None:
        index, allowed = flashinfer[0], "the head dims its kernels were compiled for"
        dim = dim or int(flashinfer[1].group(1)) * 16
        what = f"FlashInfer has no tile configuration for head dim {dim}"
    else:
        assert hit is not None
        index = hit[0]
        sizes = [hit[1].group(1), *re.findall(r"==\s*(\d+)", hit[1].group(2) or "")]
        allowed = "head sizes " + ", ".join(sizes)
        what = f"the kernel asserts {allowed}" + (f"; this model's is {dim}" if dim else "")
    remedies: List[Remedy] = []
    if dim == _MLA:
        remedies.append(Remedy(
            summary="Head size 576 is DeepSeek MLA's absorbed layout (kv_lora_rank 512 + "
                    "qk_rope_head_dim 64): regular attention kernels never take it. Run it "
                    "through an MLA kernel with the query split into q_nope (512) and q_pe (64): "
                    "FlashInfer's flashinfer.mla.BatchMLAPagedAttentionWrapper, or the serving "
                    "engine's MLA backend."))
    remedies.append(Remedy(summary=f"The kernel takes {allowed} only: run this model with another "
                           "attention backend (the engine's FlashAttention or Triton backend, or "
                           "PyTorch SDPA) that takes its head dim."))
    remedies.append(r.sdpa("Or:"))
    quotes = dedupe([ctx.quote(index), *([ctx.quote(stated[0])] if stated is not None else [])])
    return [Signal("head_assert", Category.HEAD_DIM_UNSUPPORTED, what, quotes, LOGGED, remedies)]


# vLLM's paged attention dispatches on a compiled list of head sizes and refuses the rest:
# TORCH_CHECK(false, "Unsupported head size: ", head_size) (vllm-project/vllm
# csrc/attention/attention_kernels.cu, paged_attention_v1_launcher; the list grew by release:
# 64, 80, 96, 112, 128, 256, later 120 and 192)
_UNSUPPORTED = re.compile(r"Unsupported head size:? (\d{1,4})\b")


def unsupported_size(ctx: Context) -> List[Signal]:
    hit = ctx.first(_UNSUPPORTED, ("unsupported head size",))
    if hit is None:
        return []
    size = hit[1].group(1)
    vllm = bool(ctx.text.containing(("vllm", "paged_attention")))
    who = "vLLM's paged attention kernels are" if vllm else "the kernel is"
    return [Signal("head_size_list", Category.HEAD_DIM_UNSUPPORTED,
                   f"{who} compiled for a fixed list of head sizes, and this model's head size "
                   f"{size} is not on it", [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary=("Take another attention backend that takes head size "
                                    f"{size} (VLLM_ATTENTION_BACKEND=FLASH_ATTN or FLASHINFER, "
                                    "where they run), or a vLLM release whose list has it; " if vllm
                                    else f"Use a kernel or release that supports head size {size}; ")
                           + "else a model whose head size is on the list (64, 80, 96 and 128 "
                           "in every release read)."),
                    r.sdpa("Or without the fused kernel:")],
                   details={"source": "vllm-project/vllm csrc/attention/attention_kernels.cu "
                                      "(paged_attention_v1_launcher)"})]


# A question about flash-attention and a head dim, with no error: "Support head_size 256? which
# is bigger than 128". The limits by generation, from flash-attention's README at each release:
# 1.x head dims up to 128 (backward above 64 on A100/H100 only); 2.x every head dim up to 256
# (256 backward on consumer GPUs, without dropout, from 2.5.5); none compiles above 256.
_ASKED = re.compile(r"\bsupports?\b[^\n]{0,40}?\bhead[_ ]?(?:size|dim)\w*\s*(?:of\s*|=\s*)?"
                    r"(\d{2,3})\b|\bhead[_ ]?(?:size|dim)\w*\s*(?:of\s*|=\s*)?(\d{2,3})\b[^\n]{0,40}?"
                    r"\b(?:supported|support)\b", re.I)
_FLASH = ("flash-attn", "flash_attn", "flash attention", "flash-attention", "flashattention")


def asked(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ASKED, ("support",))
    if hit is None or not ctx.text.containing(_FLASH) or "flashinfer" in ctx.text.lower \
            or any(raised.kind not in ("warning", "log") for raised in ctx.seen.raised):
        return []
    size = int(hit[1].group(1) or hit[1].group(2))
    if size <= 64:
        return []
    if size > 256:
        fix = Remedy(summary=f"No flash-attention generation compiles head dim {size} (2.x stops "
                     "at 256): use PyTorch SDPA, whose memory-efficient kernel takes it, or "
                     "split the head.")
    else:
        fix = Remedy(summary=f"flash-attn 2.x supports every head dim up to 256, {size} included "
                     "(flash-attn 1.x stopped at 128, and its backward above 64 needed an A100 "
                     "or H100; 256 backward on consumer GPUs works from 2.5.5): upgrade to "
                     "flash-attn 2, or use PyTorch SDPA.",
                     commands=['pip install --upgrade "flash-attn>=2.5.5" --no-build-isolation'])
    return [Signal("head_dim_asked", Category.HEAD_DIM_UNSUPPORTED,
                   f"head dim {size} with flash-attention: which generation compiles it decides",
                   [ctx.quote(hit[0])], HINTED, [fix],
                   details={"source": "Dao-AILab/flash-attention README at v1.0.9 and v2.5.5 "
                                      "(head dimensions supported)"})]
