"""A package's compiled library killing the interpreter as torch loads it: "Fatal Python error:
Aborted" (or a segmentation fault) with the faulthandler's stack in torch.ops.load_library
(torch/_ops.py, which dlopens the .so through ctypes) below the package's own import. A library
built against another torch's C++ ABI can fail this way instead of with an undefined symbol: its
static initialisers run torch code whose layout changed (torchao's wheels built for one torch
minor abort under the next one's nightly: pytorch/ao#2908 then skips loading them on a torch it
was not built for). The fix is the package's build for the installed torch, or the torch it was
built for (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_FATAL = re.compile(r"Fatal Python error: (?:Aborted|Segmentation fault)|Aborted \(core dumped\)|"
                    r"Segmentation fault \(core dumped\)")
_LOADER = re.compile(r"torch[/\\]_ops\.py\"?,? line \d+,? in load_library|in load_library$")
_OWNER = re.compile(r"(?:site|dist)-packages[/\\]([A-Za-z_]\w*)[/\\]")


def aborted_in_load(ctx: Context) -> List[Signal]:
    fatal = ctx.first(_FATAL, ("aborted", "segmentation fault"))
    if fatal is None:
        return []
    loader = ctx.first(_LOADER, ("load_library",))
    if loader is None or not 0 <= loader[0] - fatal[0] <= 20:
        return []
    owner = next((m.group(1) for line in ctx.text.lines[loader[0] + 1:loader[0] + 6]
                  for m in [_OWNER.search(line)] if m and m.group(1) != "torch"), None)
    if owner is None:
        return []
    package = owner.replace("_", "-")
    nightly = ctx.torch_is_nightly or bool(ctx.text.containing(("nightly", ".dev20")))
    fixes = [Remedy(summary=f"Install the {package} build made for the installed torch: for a "
                    f"torch nightly, a nightly {package} (built with the nightly torch, from the "
                    "same nightly index); for a release, the torch version this release of "
                    f"{package} was built for (its compatibility table or release notes).")]
    return [Signal("aborted_in_load", Category.TORCH_VERSION_MISMATCH,
                   f"{package}'s compiled library aborts the interpreter while torch loads it "
                   "(torch.ops.load_library): it was built against another torch's C++ ABI"
                   + (" than this torch nightly" if nightly else ""),
                   dedupe([ctx.quote(fatal[0]), ctx.quote(loader[0]), *ctx.quotes("torch")]),
                   LOGGED, fixes, details={"source": "pytorch/ao#2908"})]
