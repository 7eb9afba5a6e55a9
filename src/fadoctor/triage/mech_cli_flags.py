"""A command line whose flash-attention option the installed tool does not know: argparse's
"unrecognized arguments: --flash_attn", transformers' HfArgumentParser ("Some specified
arguments are not used by the HfArgumentParser: ['--use_flash_attn', ...]") and ms-swift's
("remaining_argv: ['--use_flash_attn', 'true']"). The option was renamed or removed in the
installed release (or the command was written for a newer one): the tool's own --help of this
release names the current spelling (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

_REJECTED = re.compile(r"(?:unrecognized arguments:|arguments are not used by the HfArgumentParser:|"
                       r"remaining_argv:)[^\n]{0,200}?(--[\w-]*(?:flash|attn|sdpa)[\w-]*)", re.I)
# ms-swift 3.x spells the attention choice --attn_impl (flash_attn, sdpa, eager); 2.x had
# --use_flash_attn (modelscope/ms-swift 3.x command-line parameters)
_TOOLS = (("swift", "ms-swift", "ms-swift 3 takes --attn_impl flash_attn (2.x's --use_flash_attn "
           "is gone)"),
          ("llamafactory", "LLaMA-Factory", "LLaMA-Factory takes flash_attn with a choice (auto, "
           "fa2, sdpa, disabled)"))


def rejected_flag(ctx: Context) -> List[Signal]:
    hit = ctx.first(_REJECTED, ("unrecognized arguments", "hfargumentparser", "remaining_argv"))
    if hit is None:
        return []
    flag = hit[1].group(1)
    low = ctx.text.joined.lower()
    tool = next(((name, hint) for key, name, hint in _TOOLS if key in low), None)
    who = tool[0] if tool else "the tool"
    fixes = [Remedy(summary=f"Spell the option as this release of {who} does (its --help lists "
                    "them): " + (tool[1] + "." if tool else "the flash-attention option was "
                                 "renamed or removed between releases."))]
    fixes.append(Remedy(summary=f"Or install the {who} release the command was written for."))
    return [Signal("rejected_flag", Category.VERSION_CONFLICT,
                   f"{who} does not know {flag}: the command was written for another release, "
                   "whose flash-attention option is spelled otherwise", [ctx.quote(hit[0])],
                   NAMED, fixes)]
