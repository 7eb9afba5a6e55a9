"""flash-attn-4 against an nvidia-cutlass-dsl it was not written for: a Python API error (a
call's arguments, a missing attribute or name) raised where FA4's CuTe code calls the DSL. The
version each flash-attn-4 beta declares comes from the matrix's fa4_releases (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category
from fadoctor.triage import serve_remedies
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_API_ERROR = re.compile(
    r"TypeError: [\w.]{1,60}\(\) (?:takes \d+|got an unexpected keyword|missing \d+ required)|"
    r"AttributeError: (?:module|type object|'\w{1,40}' object) '?[\w.]{0,80}'? has no attribute|"
    r"ImportError: cannot import name '\w{1,80}' from '(?:cutlass|cuda\.bindings)[\w.]{0,80}'")
# Where FA4 meets the DSL: its sources, the DSL's package and its MLIR dialects.
_NEAR = ("flash_attn/cute", "flash_attn.cute", "/cutlass/", "cutlass.", "nvvm.", "cutedsl",
         "cute dsl", "_mlir")
_WINDOW = 15


def dsl_api(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_API_ERROR, ("typeerror", "attributeerror", "importerror")):
        lines = ctx.text.lower_lines[max(index - _WINDOW, 0):index + _WINDOW]
        if not any(n in line for line in lines for n in _NEAR) and "cutlass" not in found.group(0):
            continue
        stated = [s.quote for s in filter(None, [ctx.package("flash-attn-4", "flash-attn4"),
                                                 ctx.package("nvidia-cutlass-dsl")])]
        return [Signal("dsl_api", Category.VERSION_CONFLICT,
                       "flash-attn-4's CuTe code and the installed nvidia-cutlass-dsl disagree on "
                       "an API: the DSL is not the version this flash-attn-4 was written for",
                       dedupe(sorted([ctx.quote(index), *stated], key=lambda q: q.line)), LOGGED,
                       serve_remedies.dsl_api(ctx),
                       needs=[] if len(stated) == 2 else [
                           ("the flash-attn-4 and nvidia-cutlass-dsl versions",
                            "python -m pip show flash-attn-4 nvidia-cutlass-dsl")])]
    return []
