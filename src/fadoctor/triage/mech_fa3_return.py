"""FlashAttention-3's changed return value: its flash_attn_func and flash_attn_varlen_func
returned (out, softmax_lse) until a 2025 commit made them return out alone, and a later one
gives the pair back only when asked. A caller written for the other form fails on the unpacking
or on the shape of what it took for the output (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.mech_fa3 import BUILD_FA3
from fadoctor.triage.signal import HINTED, Signal, dedupe

# Dao-AILab/flash-attention@ed209409 (2025-07-11, "[FA3] Don't return lse"),
# hopper/flash_attn_interface.py:307,406: FlashAttnFunc and FlashAttnVarlenFunc return `out`,
# no longer `out, softmax_lse`; @203b9b3d (2025-08-29, #1851) adds return_attn_probs=True, which
# returns (out, softmax_lse) again. No release tag of the repository lies between them.
DROPPED_LSE = "Dao-AILab/flash-attention@ed209409:hopper/flash_attn_interface.py:307,406"
LSE_KWARG = "Dao-AILab/flash-attention@203b9b3d:hopper/flash_attn_interface.py"
# FA3's top-level module (hopper/ installs flash_attn_interface), not flash-attn 2's
# flash_attn/flash_attn_interface.py
_FA3 = re.compile(r"(?<![/\\.])\bflash_attn_interface\b|hopper[/\\]flash_attn_interface|"
                  r"flash_attn_3|FLASH_ATTN_3|\bfa3\b|FlashAttention-?3", re.I)
# a tensor unpacked into names, or a pair taken as one
_PAIR_EXPECTED = re.compile(r"(?:not enough|too many) values to unpack \(expected [2-9]")
_TENSOR_EXPECTED = re.compile(r"too many values to unpack \(expected 1\)|'tuple' object has no "
                              r"attribute '(?:shape|view|reshape|unflatten|transpose|to|size)'")
# `flash_attn_func(...)[0]` then a shape error: [0] took the first row of the output tensor
_INDEXED = re.compile(r"\)\s*\[0\]")
_SHAPE = re.compile(r"don't multiply up to the size|shape '\[[^\]\n]{0,200}\]' is invalid|"
                    r"size of tensor a \(\d+\) must match|expected \d+ dimensions?|"
                    r"not enough values to unpack \(expected [2-9]")


def _fa3_shown(ctx: Context) -> Optional[int]:
    hit = ctx.first(_FA3, ("flash_attn_interface", "flash_attn_3", "fa3", "flashattention"))
    return hit[0] if hit else None


def returned(ctx: Context) -> List[Signal]:
    fa3 = _fa3_shown(ctx)
    if fa3 is None:
        return []
    pair = ctx.first(_PAIR_EXPECTED, ("values to unpack",))
    tensor = ctx.first(_TENSOR_EXPECTED, ("values to unpack", "'tuple' object"))
    indexed = ctx.first(_INDEXED, ("[0]",))
    shape = ctx.first(_SHAPE, ("multiply up", "is invalid", "must match", "dimension",
                               "values to unpack")) if indexed else None
    if tensor is not None:
        return [_signal(ctx, [tensor[0], fa3], older=True)]
    if pair is not None or (indexed is not None and shape is not None):
        at = [pair[0]] if pair is not None else [indexed[0], shape[0]] if indexed and shape else []
        return [_signal(ctx, [*at, fa3], older=False)]
    return []


def _signal(ctx: Context, lines: List[int], older: bool) -> Signal:
    if older:
        message = ("the installed FlashAttention-3 returns (out, softmax_lse), while the caller "
                   "takes one tensor: FA3 builds from before 2025-07-11 return the pair")
        fixes = [Remedy(summary="Take the output from the (out, softmax_lse) tuple the installed "
                        "FA3 returns (unpack it, out, _ = flash_attn_func(...), or take [0]), or "
                        "install FA3 from a newer commit of "
                        f"hopper/, which returns the tensor alone ({DROPPED_LSE}).",
                        commands=[BUILD_FA3])]
    else:
        message = ("the installed FlashAttention-3 returns the output tensor alone, while the "
                   "caller unpacks (out, lse) or takes [0] of it: FA3 stopped returning the "
                   "softmax LSE on 2025-07-11")
        fixes = [Remedy(summary="Pass return_attn_probs=True to get the (out, softmax_lse) tuple "
                        f"back ({LSE_KWARG}, from 2025-08-29), or drop the unpacking/[0] in the "
                        "caller; a newer release of the framework that calls it may already do "
                        f"so ({DROPPED_LSE}).")]
    return Signal("fa3_return", Category.VERSION_CONFLICT, message,
                  dedupe([ctx.quote(i) for i in lines]), HINTED, fixes,
                  needs=[("the FA3 build installed",
                          "python -m pip show flash_attn_3 flash-attn-3 2>/dev/null | head -3")])
