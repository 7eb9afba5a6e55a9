"""cuDNN's frontend finding no kernel for an attention graph: "[cudnn_frontend] Error: No
execution plans support the graph." (NVIDIA/cudnn-frontend include/cudnn_frontend/plans.h,
GRAPH_EXECUTION_PLAN_CREATION_FAILED: no engine config its heuristics return runs this graph on
this GPU with this cuDNN). Through PyTorch SDPA its cuDNN backend is the one failing, and the way
out is SDPA's other backends; through Transformer Engine, its cuDNN fused attention (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.cudnn_remedies import TE_SWITCHES, TORCH_SWITCH
from fadoctor.triage.signal import NAMED, Signal, dedupe

_NO_PLAN = re.compile(r"No execution plans support the graph", re.I)
_HEAD_DIM = re.compile(r"head[ _-]?dim\w*\s*(?:[=:>]|of|is)?\s*(\d{2,4})", re.I)


def no_plan(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_PLAN, ("no execution plans",))
    if hit is None:
        return []
    te = ctx.has("transformer_engine", "transformer engine", "fused_attn") is not None
    head = next((m for _, m in ctx.find(_HEAD_DIM, ("head",)) if int(m.group(1)) > 128), None)
    fixes = [Remedy(summary="Turn SDPA's cuDNN backend off, so SDPA takes its flash or "
                    "memory-efficient kernel for this shape (or pin those with "
                    "torch.nn.attention.sdpa_kernel):", code=TORCH_SWITCH),
             Remedy(summary="A newer torch (with a newer cuDNN) may have a plan for it; the "
                    "switch above works on this one.")]
    if te:
        fixes.insert(0, Remedy(summary="In Transformer Engine, turn its cuDNN fused attention "
                               f"off so it takes flash-attn or its unfused path ({TE_SWITCHES}).",
                               commands=["export NVTE_FUSED_ATTN=0"]))
    shape = f" (head dim {head.group(1)})" if head else ""
    return [Signal("cudnn_no_plan", Category.HEAD_DIM_UNSUPPORTED if head else
                   Category.KERNEL_FAILURE,
                   f"cuDNN has no kernel for this attention graph{shape} on this GPU with this "
                   "cuDNN: its frontend found no execution plan", dedupe([ctx.quote(hit[0]),
                                                                         *ctx.quotes("torch")]),
                   NAMED, fixes)]
