"""torch refusing MPS on a macOS its own message accepts: "The MPS backend is supported on MacOS
12.3+" printed on macOS 12.7.6. torch's MPS floor rose while the message kept the old number:
torch 2.5 needs macOS 13.0 (pytorch/pytorch#139425, its maintainer: "it should have say that you
need MacOS 13.0"), and the 2.10 releases macOS 14 ("As PyTorch needs MacOS-14 or newer to use
MPS", pytorch/pytorch#163515, 2025-09; torch 2.10.0 prints "supported on macOS 14.0+",
pytorch/pytorch#177819). So where the stated macOS meets the printed floor, the real floor is the
torch release's, and the fix a newer macOS or the last torch before that floor (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

SOURCE = "pytorch/pytorch#139425 (macOS 13 from torch 2.5), #163515 and #177819 (14 from 2.10)"
_REFUSED = re.compile(r"The MPS backend is supported on mac ?OS (\d{2})\.(\d)\+", re.I)
_MACOS = re.compile(r"(?:mac ?OS[- ]|ProductVersion:\s*)(1[0-9]|2[0-9])\.(\d{1,2})(?:\.\d{1,2})?",
                    re.I)
# (the first torch minor of a floor, that floor, the last torch before it)
FLOORS: Tuple[Tuple[Version, Version, str], ...] = (
    (Version("2.5"), Version("13.0"), "2.4.1"), (Version("2.10"), Version("14.0"), "2.9.1"))


def _macos(ctx: Context) -> Optional[Tuple[int, Version]]:
    for index, found in ctx.find(_MACOS, ("macos", "productversion", "mac os")):
        try:
            return index, Version(f"{found.group(1)}.{found.group(2)}")
        except InvalidVersion:
            continue
    return None


def stale_floor(ctx: Context) -> List[Signal]:
    hit = ctx.first(_REFUSED, ("mps backend is supported",))
    mac = _macos(ctx)
    if hit is None or mac is None:
        return []
    printed = Version(f"{hit[1].group(1)}.{hit[1].group(2)}")
    if mac[1] < printed:
        return []  # the message's own floor explains it
    torch = ctx.torch
    floors = [(first, floor, last) for first, floor, last in FLOORS if floor > mac[1]
              and (torch is None or Version(torch.base_version) >= first)]
    if not floors:
        return []
    first, floor, last = floors[0] if torch is None else floors[-1]
    which = f"torch {torch.base_version}" if torch else f"torch {first.major}.{first.minor} and later"
    return [Signal(
        "mps_macos", Category.PLATFORM_UNSUPPORTED,
        f"{which} runs MPS on macOS {floor} or newer, and this Mac runs macOS {mac[1]}: torch's "
        f"message still names its older floor ({printed}), which this macOS meets",
        dedupe([ctx.quote(hit[0]), ctx.quote(mac[0])]), NAMED,
        [Remedy(summary=f"Upgrade macOS to {floor} or newer (Apple silicon Macs that run macOS "
                f"{mac[1].major} take it), then MPS is available again."),
         Remedy(summary=f"Or stay on this macOS with torch {last}, the last release before that "
                "floor (with its matching torchvision and torchaudio).",
                commands=[command("pip", "install", f"torch=={last}")]),
         Remedy(summary="Or run on the CPU meanwhile (device='cpu').")],
        details={"source": SOURCE})]
