"""A wrapper's own floor on flash-attn ("flash-attn >= 2.1.0 required", "Paged attention
required Flash Attention 2.5.7 or later", "requires flash_attn>=2.6.3"): the version comes from
the message itself; the installed release, where stated, says whether it is below the floor or
present but not importable (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_FA = r"flash[-_ ]?att(?:n|ention)(?:[-_ ]?2)?"
_V = r"(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)"
_FLOOR = re.compile(
    rf"{_FA}\s*(?:version\s*)?(?:>=|≥)\s*{_V}\s+(?:is\s+)?required|"
    rf"requires?d?\s+{_FA}\s*(?:version\s*)?(?:>=|≥)?\s*{_V}(?:\s+or\s+(?:later|newer|above|higher))?|"
    rf"{_FA}\s+(?:version\s+)?{_V}\s+or\s+(?:later|newer|above|higher)\s+(?:is\s+)?required|"
    # a message's request, not a person's own `pip install flash-attn>=X` command
    rf"please\s+(?:install|upgrade(?:\s+to)?)\s+{_FA}\s*(?:>=|≥)\s*{_V}", re.I)


def floor(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_FLOOR, ("flash",)):
        text = next(g for g in found.groups() if g)
        try:
            need = Version(text)
        except InvalidVersion:
            continue
        if need < Version("1.0"):
            continue
        stated = ctx.fa_quote()
        if stated is not None and stated.line == ctx.quote(index).line:
            stated = None  # the floor's own number, read as a version: not what is installed
        installed = ctx.fa2 if stated is not None else None
        quotes = dedupe([ctx.quote(index), *([stated] if stated else [])])
        if installed is not None and installed >= need:
            return [Signal("fa_floor", Category.TORCH_VERSION_MISMATCH,
                           f"the code asks for flash-attn {need} or later and {installed} is "
                           "installed: its check failed because flash-attn does not import "
                           "(most often a binary built for another torch)", quotes, LOGGED,
                           [Remedy(summary="Import it directly to see the real error.",
                                   commands=[r.REVEAL_IMPORT]),
                            r.reinstall(ctx, "If it is an undefined symbol:")])]
        fixes = [Remedy(summary=f"Install flash-attn {need} or later, built for this torch "
                        "(--no-build-isolation builds against it when no wheel fits).",
                        commands=[f'pip install "flash-attn>={need}" --no-build-isolation'])]
        if on_windows(ctx):
            fixes.insert(0, Remedy(summary="On Windows flash-attn has no wheels of its own: a "
                                   "community wheel built for this torch, CUDA and Python, or "
                                   "turn off the feature that needs it."))
        return [Signal("fa_floor", Category.VERSION_CONFLICT,
                       f"the code needs flash-attn {need} or later, and "
                       + (f"{installed} is installed" if installed else
                          "the installed flash-attn is older or missing"), quotes, LOGGED,
                       fixes)]
    return []
