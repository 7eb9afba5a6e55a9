"""A program's own warning that flash-attn is missing or failed and that it runs its other
attention path instead ("flash-attn is not installed. Will only run the manual PyTorch
version.", "Flash Attention failed, using default SDPA"): not a fault. The program works; the
package only makes it faster (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy, Severity
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal

_MISSING = re.compile(r"flash[\s_-]?att\w*[^\n]{0,60}?\b(?:is not installed|not installed|not "
                      r"found|not available|unavailable|failed|could not be imported|(?:dependency "
                      r")?not ready)", re.I)
# printed by the program (a level, a [tag] or a `name:` prefix), not a sentence about one
_PRINTED = re.compile(r"^\s*(?:\[[^\]\n]{1,40}\]|(?:User)?Warning\b|WARNING|INFO|W\d{4}|"
                      r"[\w.-]{1,30}:\s)", re.I)
# the same line saying what runs instead
FALLS_BACK = re.compile(r"\b(?:will (?:only )?(?:run|use)|falls? back|falling back|fallback|"
                        r"using (?:the )?(?:default|native|manual|standard|vanilla|pytorch|torch|"
                        r"sdpa|eager|math)|defaulting to)\b", re.I)


def fallback_warning(ctx: Context) -> List[Signal]:
    hit = next(((i, m) for i, m in ctx.find(_MISSING, ("flash",))
                if FALLS_BACK.search(ctx.text.lines[i]) and _PRINTED.match(ctx.text.lines[i])),
               None)
    if hit is None:
        return []
    return [Signal("fallback_warning", Category.NOT_INSTALLED,
                   "a warning, not an error: the program found no usable flash-attn in its "
                   "environment and runs its other attention path (SDPA or plain PyTorch) "
                   "instead, with the same results, slower", [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary="Nothing to fix: the warning does not matter and is safe to "
                           "ignore; SDPA is what runs. Install flash-attn into the environment "
                           "that runs the program only for speed, and only where its wheels fit "
                           "(Linux, an Ampere or newer GPU).",
                           commands=["fadoctor fix --print-pins"])],
                   Severity.INFO)]


# a framework's own warning that the model it loads has no flash-attention path ("Current model
# does not support FlashAttention-2.", LLaMA-Factory's loader at v0.2.x): it loads the model with
# its default attention; the model's code, not the installation, decides
_MODEL_WARNING = re.compile(r"\bmodel (?:does not|doesn't) support Flash ?Attention(?:[- ]?2)?\b",
                            re.I)


def model_warning(ctx: Context) -> List[Signal]:
    hit = next(((i, m) for i, m in ctx.find(_MODEL_WARNING, ("support flash",))
                if re.search(r"\bWARN(?:ING)?\b", ctx.text.lines[i], re.I)), None)
    if hit is None:
        return []
    return [Signal("fallback_warning", Category.INFO,
                   "a warning, not an error: the model being loaded has no flash-attention path "
                   "in its code, so the framework loads it with its default attention; the "
                   "flash-attn installation is not at fault", [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary="Nothing to fix: ignore it, or use a model architecture whose "
                           "code supports FlashAttention-2 (the framework's list; a newer "
                           "framework release adds models).")], Severity.INFO)]


# any package's warning that an optional accelerator is missing and it switches to a slower path
# ("UserWarning: Onnxruntime not found or doesn't come with acceleration providers, switch to
# OpenCV with CPU device (super slow)"): a warning the program recovers from
_OPTIONAL = re.compile(r"\b(?:not found|not available|unavailable|not installed|doesn't come with|"
                       r"does not come with)\b[^\n]{0,80}?\b(?:switch(?:ing)? to|fall(?:s|ing)? back "
                       r"to|falling back|using [^\n]{1,40} instead)\b", re.I)


def optional_warning(ctx: Context) -> List[Signal]:
    hit = next(((i, m) for i, m in ctx.find(_OPTIONAL, ("not found", "not available", "unavailable",
                                                        "not installed", "come with"))
                if re.search(r"Warning\b", ctx.text.lines[i]) and not _MISSING.search(
                    ctx.text.lines[i])), None)
    if hit is None or ctx.seen.raised:
        return []
    return [Signal("fallback_warning", Category.INFO,
                   "a warning, not an error: an optional accelerated component is missing, and "
                   "the program switches to its slower path and goes on",
                   [ctx.quote(hit[0])], LOGGED - 10,
                   [Remedy(summary="Nothing is broken: ignore it, or install the accelerated "
                           "component the warning names (its GPU build) only for speed.")],
                   Severity.INFO)]
