"""A compiled extension and torch built with different C++ ABIs (_GLIBCXX_USE_CXX11_ABI): the
extension's ABI read from the torch symbol it misses (its std::string form) or its wheel's
cxx11abi tag, torch's from what the report states, the matrix's lists for the stated build, or,
for a missing c10::Error constructor (every torch defines it in its own ABI), the other form
(pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.matrix.fa2 import parse_local
from fadoctor.probes.mangling import is_torch_symbol, string_abi
from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_symbols import installed_wheel
from fadoctor.triage.signal import NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

_ERROR_CTOR = re.compile(r"_ZN3c105ErrorC[12]ENS_14SourceLocationE")


def abi_mismatch(ctx: Context, symbol: Optional[str], quotes: List[Quote]) -> Optional[Signal]:
    """The extension's C++ ABI (the symbol's std::string, or its wheel's cxx11abi tag) against
    torch's (stated, the matrix's for the stated build, or the other of c10::Error's missing)."""
    built, how = None, ""
    if symbol is not None and is_torch_symbol(symbol):
        built = string_abi(symbol)
        how = "its std::string is " + ("std::__cxx11::basic_string" if built else
                                       "the pre-C++11 std::string")
    wheel = installed_wheel(ctx)
    if built is None and wheel is not None:
        local = parse_local(wheel.value.split("+", 1)[1].split("-", 1)[0]) \
            if "+" in wheel.value else None
        if local is not None and local.cxx11_abi is not None:
            built, how = int(local.cxx11_abi), f"its wheel is named cxx11abi{str(local.cxx11_abi).upper()}"
            quotes = dedupe([*quotes, wheel.quote])
    torch_abi = ctx.torch_abi
    if torch_abi is None and built is not None and symbol and _ERROR_CTOR.match(symbol) \
            and _abi_in_play(ctx):
        # every torch defines c10::Error(SourceLocation, string) in its own ABI: an extension
        # missing one form was built for the other (flash-attn's wheels come in both ABIs,
        # cxx11abiTRUE/FALSE; a source build takes the ABI of the torch it compiled against)
        torch_abi = not built
    if built is None or torch_abi is None or built == int(torch_abi):
        return None
    quotes = dedupe([*quotes, *ctx.quotes("torch")])
    want = str(bool(torch_abi)).upper()
    hint = Remedy(summary=f"If you pick a release wheel by hand, take one named cxx11abi{want} "
                  f"(torch's _GLIBCXX_USE_CXX11_ABI = {int(torch_abi)}) whose torch build really "
                  "had that ABI (`fadoctor matrix show --flash-attn VERSION` says which did).")
    return Signal(
        "undefined_symbol", Category.CXX11_ABI_MISMATCH,
        f"the extension was built with the C++11 ABI = {built} ({how}), but "
        + (f"torch {ctx.torch}" if ctx.torch else "the installed torch (it lacks that form)")
        + f" uses _GLIBCXX_USE_CXX11_ABI = {int(torch_abi)}: its torch symbols cannot resolve",
        quotes, NAMED,
        r.keep([r.exact_wheel(ctx), *r.known_defects(ctx, Category.CXX11_ABI_MISMATCH), hint,
                r.force_build(ctx, "Or:"), r.sdpa("Meanwhile:")]),
        details={"symbol": symbol, "extension_cxx11_abi": built, "torch_cxx11_abi": int(torch_abi)},
        needs=[] if ctx.seen.get("torch_cxx11_abi") else [("torch's C++ ABI, as torch reports it",
                                                            r.REVEAL_TORCH)])


# GCC before 5.1 has only the pre-C++11 std::string (libstdc++'s dual ABI came with 5.1): a
# build with it cannot take a torch's ABI 1; Red Hat's devtoolset-2/3 are GCC 4.8/4.9
_OLD_GCC = re.compile(r"\b(?:gcc|g\+\+)[\s-]*(?:version\s*)?4\.\d|devtoolset-[23]\b", re.I)


def _abi_in_play(ctx: Context) -> bool:
    """Where an ABI, not another torch release, is the likelier reading of a missing c10::Error
    constructor: flash-attn (whose wheels come in both ABIs), the ABI named, or a GCC older than
    5 that builds only the old one. Elsewhere the package was most often built for another torch
    release, which the torch-mismatch reading covers."""
    return bool(ctx.text.containing(("flash_attn", "flash-attn", "cxx11", "_glibcxx_use"))
                or ctx.first(_OLD_GCC, ("gcc", "g++", "devtoolset")))
