"""A package's Python code and its compiled extension from different releases: the op returns
another number of values than the code unpacks (`out, q, k, v, ... = flash_attn_cuda.varlen_fwd(`
then "not enough values to unpack (expected 8, got 7)"). A stale extension left by an earlier
install, or a build against another flash-attn (xformers' bundled one) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage import ext_torch
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

# a call into a compiled module: flash-attn's (flash_attn_cuda up to 2.7.0.post2, flash_attn_gpu
# from 2.7.1: data/flash_attn_api.yaml), flash_attn_2_cuda, FA3's, xformers' bundled copy
_OP = re.compile(r"=\s*(flash_attn_cuda|flash_attn_gpu|flash_attn_2_cuda|flash_attn_3_cuda|"
                 r"flash_attn_3\._C|_C_flashattention|torch\.ops\.\w{1,40})\.(\w{1,60})\(")
_UNPACK = re.compile(r"(?:not enough|too many) values to unpack \(expected \d{1,2}(?:, got \d{1,2})?\)")
_FRAME = re.compile(r"[/\\](?:site|dist)-packages[/\\](flash_attn|xformers|vllm_flash_attn)[/\\]")
_OWNERS = {"flash_attn": "flash-attn", "xformers": "xformers", "vllm_flash_attn": "vllm-flash-attn"}


def _owner(ctx: Context, index: int) -> Optional[str]:
    for _, line in reversed(list(ctx.text.window(index, 4, 0))):
        found = _FRAME.search(line)
        if found:
            return _OWNERS[found.group(1)]
    return None


def stale(ctx: Context) -> List[Signal]:
    unpacks = [i for i, _ in ctx.find(_UNPACK, ("values to unpack",))]
    pair = next(((i, m, u) for i, m in ctx.find(_OP, ("cuda.", "gpu.", "_c.", "_c_flash", "ops."))
                 for u in unpacks if 0 <= u - i <= 3), None)
    if pair is None:
        return []
    call, unpack = (pair[0], pair[1]), (pair[2],)
    owner = _owner(ctx, call[0]) or ("xformers" if call[1].group(1) == "_C_flashattention"
                                     else "flash-attn")
    op = f"{call[1].group(1)}.{call[1].group(2)}"
    whose = owner + ("'" if owner.endswith("s") else "'s")
    return [Signal("stale_extension", Category.VERSION_CONFLICT,
                   f"{whose} Python code and its compiled {op} come from different releases: the "
                   "op returns another number of values than the code unpacks",
                   dedupe([ctx.quote(call[0]), ctx.quote(unpack[0])]), NAMED, _fixes(ctx, owner))]


def _fixes(ctx: Context, owner: str) -> List[Remedy]:
    if owner == "xformers":
        torch = str(ctx.torch) if ctx.torch else None
        return [*ext_torch.remedies("xformers", None, torch)[-1:],
                Remedy(summary="xformers' wrapper and the flash-attention it was built with "
                       "disagree: install an xformers release (or a build of its newest source) "
                       "whose wrapper matches, or uninstall xformers and use flash-attn directly.",
                       commands=[command("pip", "install", "--upgrade", "xformers")])]
    pin = requirement(owner, ctx.fa2) if owner == "flash-attn" and ctx.fa2 is not None \
        and ctx.fa2_exact else owner
    return [Remedy(summary=f"Remove every copy of {owner} (an extension left by an earlier "
                   "install stays importable: uninstall until pip finds none), then reinstall "
                   "it without pip's cache.",
                   commands=[command("pip", "uninstall", "-y", owner),
                             command("pip", "uninstall", "-y", owner),
                             command("pip", "install", pin, "--no-build-isolation",
                                     "--no-cache-dir")])]
