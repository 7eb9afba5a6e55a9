"""A report that flash-attention runs but gives NaN or Inf (a loss, gradients, an output): a
numerics finding, the weakest kind (the report's words, no error), with the steps that tell the
kernel from the model: the same run on SDPA, bf16 instead of fp16, the newest release (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, Signal

_NAN = re.compile(r"\b(?:nan|NaN|NAN|inf|Inf)s?\b[^\n]{0,80}?|\b(?:loss|grad\w*|output|logits|"
                  r"attention)\b[^\n]{0,60}?\b(?:nan|NaN|NAN|inf)\b")
_ABOUT = re.compile(r"\b(?:loss|grad\w*|output|logits|attn|attention|becomes?|turns?|gives?|"
                    r"returns?|produces?)\b", re.I)
_FLASH = ("flash_attention_2", "flash-attn", "flash_attn", "flashattention", "flash attention",
          "flash-attention", "fa2", "fa3", "flash_attention_3")


def nan(ctx: Context) -> List[Signal]:
    if not ctx.text.containing(_FLASH):
        return []
    hit = next(((i, m) for i, m in ctx.find(_NAN, ("nan", "inf"))
                if _ABOUT.search(ctx.text.lines[i]) and "nan_to_num" not in ctx.low(i)), None)
    if hit is None:
        return []
    fp16 = ctx.has("float16", "fp16", "torch.half") is not None
    fixes = [r.sdpa("Run the same step with SDPA: if the NaN goes away, flash-attention's kernel "
                    "is the cause; if not, the model or data is."),
             Remedy(summary="Upgrade flash-attn to its newest release: numerical fixes land in "
                    "patch releases.",
                    commands=['pip install --upgrade flash-attn --no-build-isolation'])]
    if fp16:
        fixes.insert(1, Remedy(summary="fp16 overflows where bf16 does not: train in bfloat16 "
                               "(the GPU must be Ampere or newer, as flash-attention needs "
                               "anyway)."))
    return [Signal("numerics", Category.NUMERICS,
                   "the report says flash-attention runs but gives NaN or Inf: compare with "
                   "SDPA to tell the kernel from the model", [ctx.quote(hit[0])], HINTED, fixes,
                   needs=[("the dtype, head dim and flash-attn version of the run",
                           "python -m torch.utils.collect_env; pip show flash-attn")])]
