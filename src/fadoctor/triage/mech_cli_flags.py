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


# A value a library validates against the values it knows, printed with that list: Lightning's
# "Precision 'bf16-true' is invalid. Allowed precision values: ('16-mixed', 'bf16-mixed', ...)"
# (lightning/fabric/connector.py, _convert_precision_to_unified_args). A value the caller passes
# that the installed release's list lacks is one a later release added: the caller was written
# for it.
_INVALID = re.compile(r"['\"]([\w.-]{1,40})['\"] is (?:invalid|not supported|not a valid \w+)\.?\s+"
                      r"(?:Allowed|Supported|Valid|Available)\b[^:\n]{0,40}:\s*[\(\[{]([^\n]{1,600})")


def unknown_value(ctx: Context) -> List[Signal]:
    from fadoctor.triage.mech_api_skew import frame_package

    hits = list(ctx.find(_INVALID, ("invalid", "not supported", "not a valid")))
    if not hits:
        return []
    # the occurrence under a traceback names the package (a title repeats it with none above)
    framed = [(h, frame_package(ctx, h[0], ("torch",), after=1)) for h in hits]
    hit, package = next(((h, p) for h, p in framed if p), framed[0])
    value, listed = hit[1].group(1), hit[1].group(2)
    if re.search(rf"['\"]{re.escape(value)}['\"]", listed):
        return []
    who = package or "the library that raised it"
    return [Signal("unknown_value", Category.VERSION_CONFLICT,
                   f"{'the installed ' if package else ''}{who} does not know the value "
                   f"'{value}' (its list is the one printed): the code passing it was written "
                   "for a later release, which added it",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Upgrade {who} to the release the calling code requires (its "
                           "requirements name it), which accepts '" + value + "'.",
                           commands=[f"pip install --upgrade {package}"] if package else []),
                    Remedy(summary="Or pass one of the values the installed release lists.")])]
