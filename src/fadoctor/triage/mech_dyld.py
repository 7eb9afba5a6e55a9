"""macOS's form of an undefined symbol: "dlopen(.../torchaudio/lib/libtorchaudio.so, 0x0006):
Symbol not found: __ZN2at8internal...  Referenced from: ... Expected in: .../libtorch_cpu.dylib"
(dyld; Mach-O symbols carry one more leading underscore than ELF's). A torch C++ symbol (at::,
c10::, torch::) expected in torch's own dylib means the extension was compiled against another
torch than the installed one, as on Linux (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import dist_of
from fadoctor.triage.signal import NAMED, Signal, dedupe

# any symbol (a C one such as _torch_library_impl too) that dyld expected in torch's own dylib
_NOT_FOUND = re.compile(r"Symbol not found: _(\w{1,400})")
_OPENED = re.compile(r"dlopen\(([^,]{1,400}), 0x[0-9a-fA-F]+\)")
_EXPECTED = re.compile(r"Expected in:[^\n]{0,200}?(libtorch\w*\.dylib|libc10\w*\.dylib)")
_PACKAGE = re.compile(r"(?:site|dist)-packages/([A-Za-z_]\w*)/")


def torch_symbol(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NOT_FOUND, ("symbol not found",))
    if hit is None:
        return []
    index, found = hit
    near = "\n".join(ctx.text.lines[max(0, index - 2):index + 4])
    opened, expected = _OPENED.search(near), _EXPECTED.search(near)
    if expected is None:
        return []
    package = _PACKAGE.search(opened.group(1)) if opened else None
    owner = dist_of(package.group(1)) if package and package.group(1) != "torch" else None
    what = owner or "the extension"
    kind = "C++ symbol" if found.group(1).startswith("_Z") else "symbol"
    return [Signal("dyld_symbol", Category.TORCH_VERSION_MISMATCH,
                   f"{what} needs a PyTorch {kind} ({_short(found.group(1))}) that the installed "
                   f"torch's {expected.group(1)} does not export (macOS's form of an undefined "
                   "symbol): it was compiled against another torch",
                   dedupe([ctx.quote(index), *ctx.quotes("torch")]), NAMED,
                   r.rebuild_other(ctx, owner))]


def _short(symbol: str) -> str:
    return symbol if len(symbol) <= 60 else symbol[:60] + "\u2026"
