"""TorchCodec failing to load its native library: its own loader (torchcodec/_core/ops.py,
load_torchcodec_shared_libraries) tries each FFmpeg major's build of libtorchcodec and raises
"Could not load libtorchcodec" when none loads. Each torchcodec release is built against one
torch (not ABI-stable across torch minors before torch 2.12), so a torch upgrade without
torchcodec's breaks it; the other usual cause is no FFmpeg with shared libraries. Its README's
compatibility table (meta-pytorch/torchcodec README.md, "compatibility between versions of
torchcodec, torch and Python"): 0.0.3 torch 2.4, 0.1 2.5, 0.2 2.6, 0.3-0.5 2.7, 0.6-0.7 2.8,
0.8-0.9 2.9, 0.10 2.10, 0.11 2.11, 0.12 torch >= 2.11 (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage.context import Context
from fadoctor.triage.signal import IMPLIED, NAMED, Signal, dedupe

SOURCE = "meta-pytorch/torchcodec README.md (torchcodec / torch / Python compatibility table)"
# torch minor -> the newest torchcodec built for it
FOR_TORCH: Dict[str, str] = {"2.4": "0.0.3", "2.5": "0.1", "2.6": "0.2", "2.7": "0.5",
                             "2.8": "0.7", "2.9": "0.9", "2.10": "0.10", "2.11": "0.12"}
_LOADER = re.compile(r"Could not load libtorchcodec|load_torchcodec_shared_libraries\(\)")
_FFMPEG = re.compile(r"FFmpeg is not properly installed|libav(?:util|codec|format)[\w.-]{0,20}"
                     r"\.so[\w.]{0,10}: cannot open shared object file", re.I)
_STATED_CODEC = re.compile(r"\btorchcodec[ =]=?\s?(\d+\.\d+(?:\.\d+)?)")


def _codec(ctx: Context) -> Optional[Version]:
    hit = ctx.first(_STATED_CODEC, ("torchcodec",))
    try:
        return Version(hit[1].group(1)) if hit else None
    except InvalidVersion:
        return None


def failed_load(ctx: Context) -> List[Signal]:
    hit = ctx.first(_LOADER, ("libtorchcodec", "load_torchcodec_shared_libraries"))
    if hit is None:
        return []
    quotes = dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")])
    torch = ctx.torch
    minor = f"{torch.major}.{torch.minor}" if torch else None
    codec = _codec(ctx)
    match = FOR_TORCH.get(minor) if minor else None
    ffmpeg = ctx.first(_FFMPEG, ("ffmpeg", "libav"))
    if match is None or (codec is not None and f"{codec.major}.{codec.minor}" == match):
        if ffmpeg is None and match is None:
            return []
        return [Signal("torchcodec_ffmpeg", Category.NOT_INSTALLED,
                       "TorchCodec cannot load its library: no FFmpeg with shared libraries (4 to "
                       "8) is found, which every torchcodec build loads",
                       dedupe([*quotes, *([ctx.quote(ffmpeg[0])] if ffmpeg else [])]), IMPLIED,
                       [Remedy(summary="Install FFmpeg's shared libraries (a major from 4 to 8): "
                               "the distribution's ffmpeg package, or conda's.",
                               commands=[command("conda", "install", "ffmpeg")])],
                       details={"source": SOURCE})]
    return [Signal(
        "torchcodec_torch", Category.TORCH_VERSION_MISMATCH,
        f"TorchCodec's library is built against one torch, and torch {torch} needs torchcodec "
        f"{match}" + (f" (torchcodec {codec} is installed)" if codec else
                      ": a torchcodec built for another torch fails to load so (as does one "
                      "without FFmpeg's shared libraries)"),
        quotes, NAMED if codec else IMPLIED,
        [Remedy(summary=f"Install torchcodec {match}, the release built for torch {minor}.",
                commands=[command("pip", "install", requirement(
                    "torchcodec", match if match.count(".") == 2 else f"{match}.0", op="~="))]),
         Remedy(summary="Or keep the torchcodec installed and pin torch to the minor it was built "
                "for (its README's table); FFmpeg with shared libraries (4 to 8) is needed either "
                "way.")],
        details={"source": SOURCE})]
