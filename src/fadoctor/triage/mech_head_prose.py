"""A head dim a kernel library refuses, told in the report's own words rather than printed by a
known check: "[Bug] head_dim 96 not supported", "it still complains about unsupported head_dim
256", "`head_size` only be [8, 16, 32, 64, 128] in flash_attention". Attention kernels are
compiled for a fixed list of head dims (vLLM's paged attention, SGLang's Triton kernels,
FlashInfer's and SageAttention's dispatch, AITemplate's flash_attention op), so the fix is a
release whose list holds the dim, or a backend that takes any dim (PyTorch SDPA's math and
memory-efficient kernels).

DeepSeek-V2/V3 use multi-head latent attention: their configs state qk_nope_head_dim 128 +
qk_rope_head_dim 64 (a query/key head dim of 192), v_head_dim 128, and kv_lora_rank 512 (the
absorbed form's 576 = 512 + 64) (deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json);
hidden_size / num_attention_heads (7168 / 128 = 56) is not a head dim they use. flash-attn's own
head-dim questions are mech_head_assert.asked's (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_head_assert import asked
from fadoctor.triage.mech_symbols import KNOWN
from fadoctor.triage.signal import HINTED, Signal, dedupe

_HEAD = r"head[ _-]?(?:dim(?:ension)?|size)s?`?"
_NUM = r"[`'\"]?\s*(?:(?:is|=|:|of)\s*)?[`'\"]?(\d{2,3})\b"
_REFUSED = re.compile(
    rf"\b{_HEAD}{_NUM}[^.\n]{{0,40}}?(?:\bnot|n'?t|\bun)\s*(?:yet\s+)?support"
    rf"|(?:\bnot|n'?t|\bun)\s*(?:yet\s+)?support\w*\s+(?:for\s+)?(?:the\s+)?{_HEAD}(?:\s+dim)?"
    rf"{_NUM}", re.I)
# a title asking for the dim: "Support head_dim 256 for Ideogram 4.0"
_REQUEST = re.compile(rf"^\W*(?:\[[^\]]*\]\s*)?(?:add\s+)?support\s+(?:for\s+)?{_HEAD}{_NUM}", re.I)
# the list a kernel takes, as the report quotes it: "`head_size` only be [8, 16, 32, 64, 128]"
_LISTED = re.compile(rf"\b{_HEAD}\s+(?:can\s+)?(?:only\s+(?:be|supports?|takes?|in)|must be "
                     rf"(?:one of|in)|should be in|not in)\s*\[([\d,\s]+)\]", re.I)
_NEEDLES = ("head_dim", "head dim", "head_size", "head size", "headdim", "head-dim")
# the libraries whose compiled head-dim lists refuse a model's, as reports name them (display,
# pattern, package index name)
_LIBRARIES: Tuple[Tuple[str, re.Pattern[str], str, Tuple[str, ...]], ...] = (
    ("SageAttention", re.compile(r"\bsage[\s_-]?att(?:entio)?n", re.I), "sageattention", ("sage",)),
    ("FlashInfer", re.compile(r"\bflashinfer\b", re.I), "flashinfer-python", ("flashinfer",)),
    ("SGLang", re.compile(r"\bsglang\b", re.I), "sglang", ("sglang",)),
    ("vLLM", re.compile(r"\bvllm\b", re.I), "vllm", ("vllm",)),
    ("xFormers", re.compile(r"\bxformers\b", re.I), "xformers", ("xformers",)),
    ("AITemplate", re.compile(r"\baitemplate\b", re.I), "aitemplate", ("aitemplate",)),
    ("TensorRT-LLM", re.compile(r"\btensorrt[-_ ]?llm\b", re.I), "tensorrt-llm", ("tensorrt",)),
    ("LMDeploy", re.compile(r"\blmdeploy\b", re.I), "lmdeploy", ("lmdeploy",)))
_OFF = re.compile(r"--(?:disable|no)[-_][\w-]+", re.I)
_DEEPSEEK = re.compile(r"\bdeep[\s-]?seek", re.I)
_MLA_DIMS = {64, 128, 192, 512, 576}


def stated(ctx: Context) -> List[Signal]:
    found = _refusal(ctx)
    if found is None or asked(ctx):
        return []
    index, dim, listed = found
    display, dist = _library(ctx, index)
    quotes = dedupe([ctx.quote(index)])
    remedies: List[Remedy] = []
    if dim is not None and dim not in _MLA_DIMS and ctx.text.containing(("deepseek", "deep seek")) \
            and any(_DEEPSEEK.search(ctx.text.lines[i]) for i in ctx.text.containing(
                ("deepseek", "deep seek"))):
        remedies.append(Remedy(
            summary=f"{dim} is not a DeepSeek head dim: DeepSeek-V2/V3 use MLA, whose query/key "
                    "head dim is 192 (qk_nope_head_dim 128 + qk_rope_head_dim 64) and value head "
                    "dim 128, or 576/512 in the absorbed form (kv_lora_rank 512 + 64); "
                    "hidden_size / num_attention_heads is not its head dim. Run it through an "
                    "MLA kernel (the engine's MLA backend, FlashInfer's BatchMLAPagedAttention"
                    "Wrapper) rather than padding a regular kernel."))
    who = display or "the kernel library"
    dims = f"head_dim {dim}" if dim is not None else "this model's head dim"
    takes = f" (it takes {listed})" if listed else ""
    upgrade = [command("python", "-m", "pip", "install", "--upgrade", dist)] \
        if dist is not None and dist in KNOWN else []
    remedies.append(Remedy(
        summary=f"{who}'s attention kernels are compiled for a fixed list of head dims{takes}, "
                f"and {dims} is not on this release's list: upgrade {who} to a release that "
                f"adds {dims} (its changelog names it), or run this model with an attention "
                "backend that takes any head dim.", commands=upgrade))
    remedies.append(r.sdpa("Or PyTorch SDPA, which takes any head dim:"))
    message = (f"{who} has no kernel for {dims}" if dim is not None else
               f"{who}'s kernels take a fixed list of head dims{takes}")
    return [Signal("head_dim_stated", Category.HEAD_DIM_UNSUPPORTED, message, quotes, HINTED,
                   remedies)]


def _refusal(ctx: Context) -> Optional[Tuple[int, Optional[int], str]]:
    """The line telling of the refusal, the head dim it names, and the list it quotes."""
    for index in ctx.text.containing(_NEEDLES):
        line = ctx.text.lines[index]
        hit = _REFUSED.search(line) or (_REQUEST.search(line) if index == 0 else None)
        if hit is not None:
            dim = next(int(g) for g in hit.groups() if g is not None)
            listed = _LISTED.search(" ".join(ctx.text.lines[i] for i in ctx.text.containing(
                _NEEDLES)))
            return index, dim, _dims(listed.group(1)) if listed else ""
        listed = _LISTED.search(line)
        if listed is not None:
            return index, None, _dims(listed.group(1))
    return None


def _dims(listed: str) -> str:
    return "head dims " + ", ".join(d for d in re.split(r"[,\s]+", listed) if d)


def _library(ctx: Context, index: int) -> Tuple[Optional[str], Optional[str]]:
    """The library the refusal is about: the one its line or the title names, else the one the
    report names most (the first named on a tie); a library switched off ("--disable-flashinfer")
    is not it."""
    title = ctx.text.lines[0] if ctx.text.lines else ""
    for line in (_OFF.sub(" ", ctx.text.lines[index]), _OFF.sub(" ", title)):
        for display, pattern, dist, _ in _LIBRARIES:
            if pattern.search(line):
                return display, dist
    counts = []
    for display, pattern, dist, needles in _LIBRARIES:
        where = [i for i in ctx.text.containing(needles)
                 if pattern.search(_OFF.sub(" ", ctx.text.lines[i]))]
        if where:
            counts.append((-len(where), where[0], display, dist))
    return (min(counts)[2], min(counts)[3]) if counts else (None, None)
