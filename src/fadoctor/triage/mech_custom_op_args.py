"""An argument of the wrong type at flash-attn's registered custom ops under torch.compile:
"flash_attn::_flash_attn_varlen_forward() Expected a value of type 'int' for argument
'max_seqlen_q' but instead found type 'FakeTensor'". From 2.7.0 flash-attn registers its kernels
as torch.library custom ops (the matrix's `custom_ops`, from flash_attn_interface.py at v2.7.0,
with `max_seqlen_q: int`); torch checks each call against the op's schema, and under
torch.compile a tensor passed for an int is a FakeTensor. The caller (a model's attention code)
computed max_seqlen as a tensor: it must pass an int, and .item() under torch.compile needs
Dynamo to capture scalar outputs (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_WRONG_TYPE = re.compile(r"(flash_attn(?:_3)?::\w+)\(\) Expected a value of type '(\w+)'"
                         r"(?:\s+for argument '(\w+)')?(?:\s+but instead found type '(\w+)')?")
_ARGUMENT = re.compile(r"for argument '(\w+)' but instead found type '(\w+)'")


def wrong_type(ctx: Context) -> List[Signal]:
    hit = ctx.first(_WRONG_TYPE, ("expected a value of type",))
    if hit is None:
        return []
    index, found = hit
    op, want, argument, got = found.group(1), found.group(2), found.group(3), found.group(4)
    quotes = [ctx.quote(index)]
    if argument is None:  # the message wrapped onto the next line
        for i, line in ctx.text.window(index, 0, 2):
            more = _ARGUMENT.search(line)
            if more:
                argument, got = more.group(1), more.group(2)
                quotes.append(ctx.quote(i))
                break
    what = f"'{argument}'" if argument else "an argument"
    compiled = got in ("FakeTensor", "FunctionalTensor") or ctx.has("torch.compile",
                                                                      "torch._dynamo") is not None
    message = (f"the caller passes {what} to flash-attn's custom op {op} as a "
               f"{got or 'another type'}, where the op's schema takes {want}"
               + (" (under torch.compile a tensor is traced as a FakeTensor)" if compiled else ""))
    fixes = [Remedy(summary=f"Upgrade the package whose attention code makes this call (most "
                    "often transformers' flash-attention path) to a release, or its main "
                    f"branch, that passes {what} as a Python {want}.",
                    commands=["pip install --upgrade transformers"])]
    if want == "int":
        fixes.append(Remedy(
            summary=f"In your own code, pass {what} as an int (int(max_seqlen) or .item()); under "
                    "torch.compile, .item() traces only with Dynamo capturing scalar outputs.",
            code="import torch\ntorch._dynamo.config.capture_scalar_outputs = True  # or "
                 "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1\nmax_seqlen = int(max_seqlen)  # not a "
                 "0-d tensor"))
    return [Signal("custom_op_args", Category.COMPILE_GRAPH_BREAK if compiled else
                   Category.VERSION_CONFLICT, message, dedupe(quotes), NAMED, fixes)]
