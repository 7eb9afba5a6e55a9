"""A nightly build of a PyTorch domain library beside a released torch. The `-nightly`
distributions of PyTorch's own libraries (torchrec-nightly, fbgemm-gpu-nightly, torchao's and
torchvision's nightlies on PyTorch's nightly index) are built each night against that night's
torch: their compiled parts load only with the torch nightly of the same date, and a released
torch cannot load them (their METADATA pins the torch nightly they were built with). The released
library, built for the released torch, is the pair (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_FAILED = re.compile(r"\b(?:\w*Error\b|not found|undefined symbol|cannot (?:import|load|open)|"
                     r"failed)", re.I)
_NIGHTLY = re.compile(r"\b(torch(?!vision-|audio-)[a-z]{2,12}|torchvision|torchaudio|fbgemm[-_]gpu)"
                      r"-nightly\b", re.I)


def nightly_beside_release(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NIGHTLY, ("-nightly",))
    failed = ctx.first(_FAILED, ("error", "not found", "undefined symbol", "cannot", "failed"))
    # the torch version itself (a nightly's is X.Y.Z.devDATE), not the line's word "nightly",
    # which here is the library's
    if hit is None or failed is None or ctx.torch is None or ctx.torch.is_devrelease:
        return []
    package = hit[1].group(1).lower().replace("_", "-")
    torch = f"{ctx.torch.major}.{ctx.torch.minor}"
    return [Signal("nightly_beside_release", Category.VERSION_CONFLICT,
                   f"{package}-nightly is built each night against that night's PyTorch "
                   f"nightly, and this torch is the release {ctx.torch}: the nightly library's "
                   "compiled parts do not load with it",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch"), ctx.quote(failed[0])]),
                   LOGGED,
                   [Remedy(summary=f"Use the released {package} built for torch {torch} (its "
                           f"release notes name the torch each release pairs with) in place of "
                           f"{package}-nightly; or run both from the nightly index: PyTorch "
                           f"nightly together with {package}-nightly of the same date. "
                           f"(A bare `pip install {package}` takes its newest release, which "
                           "may pin a newer torch.)",
                           commands=[command("pip", "uninstall", "-y", f"{package}-nightly")])])]
