"""Windows' forms of an undefined symbol: "DLL load failed while importing flash_attn_2_cuda: The
specified procedure could not be found", and "The procedure entry point ... could not be located
in the dynamic link library ...\\xformers\\_C.pyd": a binary built for another torch; and vLLM
on Windows itself, which it does not support (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_symbols import owner_of
from fadoctor.triage.signal import LOGGED, NAMED, Signal, dedupe

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


# vLLM's install guide: "Requirements - OS: Linux … vLLM does not support Windows natively. To
# run vLLM on Windows, you can use the Windows Subsystem for Linux (WSL)"
# (vllm-project/vllm@v0.26.0:docs/getting_started/installation/gpu.md)
_WINDOWS = re.compile(r"\bwindows\b|\bwin_amd64\b|\b[A-Z]:\\\\", re.I)


def linux_only(ctx: Context) -> List[Signal]:
    """vLLM run or installed on Windows itself (not WSL, where it is supported)."""
    if ctx.text.containing(("wsl",)) or not ctx.text.containing(("vllm",)):
        return []
    hit = ctx.first(_WINDOWS, ("windows", "win_amd64", ":\\"))
    if hit is None:
        return []
    quotes = dedupe([ctx.quote(hit[0]), ctx.quote(ctx.text.containing(("vllm",))[0])])
    return [Signal("linux_only", Category.PLATFORM_UNSUPPORTED,
                   "vLLM runs on Linux only: it does not support Windows natively", quotes, LOGGED,
                   [Remedy(summary="Run vLLM under WSL2 (a Linux distribution on Windows) or in "
                           "its Linux Docker image; natively on Windows only community forks "
                           "build it.", commands=["wsl --install"])])]
