"""Windows' forms of an undefined symbol: "DLL load failed while importing flash_attn_2_cuda: The
specified procedure could not be found", and "The procedure entry point ... could not be located
in the dynamic link library ...\\xformers\\_C.pyd": a binary built for another torch (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_symbols import owner_of
from fadoctor.triage.signal import NAMED, Signal, dedupe

_ENTRY_POINT = re.compile(r"procedure entry point\b[^\n]{0,300}?could not be located in the dynamic "
                          r"link library\s+([^\n]{1,400}?\.(?:pyd|dll))", re.I)


def dll_symbol(ctx: Context, index: int) -> Signal:
    """Windows' "DLL load failed while importing flash_attn_2_cuda" (with "The specified procedure
    could not be found", or no reason): the Windows form of an undefined symbol, a wheel built for
    another torch (a missing dependency DLL says "module could not be found" instead)."""
    torch = f" {ctx.torch}" if ctx.torch else ""
    return Signal("windows_symbol", Category.TORCH_VERSION_MISMATCH,
                  "Windows cannot load flash_attn_2_cuda: a function it needs is missing from the "
                  f"installed torch{torch} (Windows' form of an undefined symbol): the wheel was "
                  "built for another torch", dedupe([ctx.quote(index), *ctx.quotes("torch")]),
                  NAMED,
                  [Remedy(summary="Replace it with a flash-attn wheel built for exactly this torch, "
                          "CUDA and Python (Windows wheels come from third parties: match all "
                          "three), or rebuild it against this torch.",
                          commands=["pip uninstall -y flash-attn",
                                    "pip install flash-attn --no-build-isolation --no-cache-dir"]),
                   r.sdpa("Or uninstall flash-attn and run with PyTorch SDPA:")])


def entry_point(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ENTRY_POINT, ("procedure entry point",))
    if hit is None:
        return []
    path = hit[1].group(1).replace("\\", "/")
    if "flash_attn" in path:
        return [dll_symbol(ctx, hit[0])]
    owner = owner_of(path)
    torch = f" {ctx.torch}" if ctx.torch else ""
    return [Signal("windows_symbol", Category.TORCH_VERSION_MISMATCH,
                   f"Windows cannot load {owner or 'the extension'}: a function it needs is missing "
                   f"from the installed torch{torch} (Windows' form of an undefined symbol): it was "
                   "built for another torch", dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]),
                   NAMED, r.rebuild_other(ctx, owner))]
