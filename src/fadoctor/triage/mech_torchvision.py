"""torchvision's compiled ops failing to load beside the installed torch: torchvision's own check
(torchvision/extension.py, _assert_has_ops: "Couldn't load custom C++ ops. This can happen if
your PyTorch and torchvision versions are incompatible, or if you had errors while compiling
torchvision from source"). Each torchvision release's wheel requires one torch release (its
metadata, data/ext_torch.yaml), and a nightly torch needs the torchvision of the same nightly
(pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, url
from fadoctor.triage import ext_torch
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.signal import NAMED, Signal, dedupe

_OPS = re.compile(r"Couldn't load custom C\+\+ ops|"
                  # the same failure one step later: torchvision/_meta_registrations.py registers
                  # fake kernels (torch.library.register_fake("torchvision::nms")) for the ops its
                  # _C library defines, and torch refuses an op that library never loaded
                  r"operator torchvision::\w{1,40} does not exist")


def ops_not_loaded(ctx: Context) -> List[Signal]:
    hit = ctx.first(_OPS, ("couldn't load custom c++ ops", "operator torchvision::"))
    if hit is None:
        return []
    stated = ctx.package("torchvision")
    torch = str(ctx.torch) if ctx.torch is not None else None
    if ctx.torch_is_nightly:
        fixes = [Remedy(summary="A nightly torch needs the nightly torchvision of the same "
                        "date: install both from the nightly index in one command (pip install "
                        "--pre torch torchvision --index-url <the nightly index for your CUDA>), "
                        "so the pair matches.")]
    else:
        fixes = ext_torch.remedies("torchvision", stated.value if stated else None, torch)
    fixes.append(Remedy(summary="Or reinstall torch and torchvision together, from one index, "
                        "so pip picks the matching pair (a torchvision left from an earlier torch, "
                        "or one built from source against another, is the usual cause)."))
    return [Signal("torchvision_ops", Category.TORCH_VERSION_MISMATCH,
                   "torchvision's compiled ops do not load with this torch"
                   + (f" {torch}" if torch else "")
                   + ": the two are from different releases (each torchvision wheel is built "
                   "for one torch)", dedupe([ctx.quote(hit[0]), *ctx.quotes("torch"),
                                             *([stated.quote] if stated else [])]), NAMED,
                   fixes, details={"source": "torchvision/extension.py (_assert_has_ops); "
                                             "data/ext_torch.yaml"})]


# torch's companion libraries not installed at all ("No module named 'torchaudio'"): a project
# that leaves torch and its companions out of its requirements (to let the user pick the CUDA
# build) needs them installed beside torch, at the release built for it
_COMPANION = re.compile(r"No module named ['\"`](torchaudio|torchvision)['\"`]")


def companion_missing(ctx: Context) -> List[Signal]:
    hit = ctx.first(_COMPANION, ("no module named",))
    if hit is None:
        return []
    package = hit[1].group(1)
    torch = str(ctx.torch) if ctx.torch is not None else None
    fixes = [*(ext_torch.remedies(package, None, torch)[-1:] if torch else []),
             Remedy(summary=f"Install {package} together with torch from the index torch came "
                    f"from (the same CUDA build), so pip takes the {package} release built for "
                    f"that torch instead of replacing torch: the PyTorch install selector's "
                    f"command, with {package} in it.")]
    return [Signal("companion_missing", Category.NOT_INSTALLED,
                   f"{package}, torch's companion library, is not installed in this environment "
                   "(projects often leave torch and its companions out of their requirements)",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED, fixes)]


# torchaudio's FFmpeg binding failing to load the FFmpeg libraries it links (torchaudio's
# _extension: `_load_lib("libtorchaudio_ffmpeg")` raising OSError becomes "FFmpeg libraries are
# not found. Please install FFmpeg."): torchaudio's install docs say its binaries are
# "compatible with FFmpeg 4.1 to 4.4" (2.0.1) and, "Starting version 2.1, ... FFmpeg version 6, 5
# and 4. (>=4.4, <7)"
_FFMPEG = re.compile(r"FFmpeg libraries are not found\. Please install FFmpeg")


def ffmpeg_missing(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FFMPEG, ("ffmpeg libraries are not found",))
    if hit is None:
        return []
    stated = ctx.package("torchaudio")
    release = parse_version(stated.value) if stated is not None else None
    old = release is not None and release.release < (2, 1)
    spec = "ffmpeg<5" if old else "ffmpeg<7"
    return [Signal("ffmpeg_missing", Category.NOT_INSTALLED,
                   "torchaudio's FFmpeg binding finds no FFmpeg libraries it can load: FFmpeg is "
                   "not installed, or only a release this torchaudio does not link ("
                   + ("FFmpeg 4 for this torchaudio" if old else
                      "4 to 6 from torchaudio 2.1, 4 before it") + ")",
                   dedupe([ctx.quote(hit[0]), *([stated.quote] if stated else [])]), NAMED,
                   [Remedy(summary=f"Install FFmpeg's shared libraries of a release torchaudio "
                           f"loads ({spec}) into this environment, e.g. from conda-forge; a "
                           "system FFmpeg 7 is not one of them.",
                           commands=[command("conda", "install", "-c", "conda-forge", spec)])])]


# torchvision's own CUDA check (torchvision/extension.py, _check_cuda_version): "Detected that
# PyTorch and torchvision were compiled with different CUDA major versions. PyTorch has CUDA
# Version=12.1 and torchvision has CUDA Version=11.8. Please reinstall the torchvision that
# matches your PyTorch install." (to torchvision 0.14 it compared the minor version too)
_CUDA_PAIR = re.compile(r"PyTorch and torchvision were compiled with different CUDA (?:major )?"
                        r"versions\. PyTorch has CUDA Version ?= ?(\d+)\.(\d+) and torchvision "
                        r"has CUDA Version ?= ?(\d+)\.(\d+)")


def cuda_pair(ctx: Context) -> List[Signal]:
    from fadoctor.install.torch import torch_index  # torch's index for its own variant

    hit = ctx.first(_CUDA_PAIR, ("compiled with different cuda",))
    if hit is None:
        return []
    major, minor, tv_major, tv_minor = hit[1].groups()
    variant = f"cu{major}{minor}"
    torch = ctx.torch
    words = [f"torchvision=={v}" for v, _ in (ext_torch.releases_for("torchvision", torch)[-1:]
                                             if torch is not None else [])]
    pin = words[0] if words else "torchvision"
    return [Signal("torchvision_cuda", Category.CUDA_RUNTIME_MISMATCH,
                   f"torch is built for CUDA {major}.{minor} and torchvision for CUDA "
                   f"{tv_major}.{tv_minor}: a torchvision from another index (another CUDA "
                   "build) than torch's", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Reinstall torchvision from the index torch came from ({variant}, "
                           "the same CUDA build), at the release built for this torch; the same "
                           "for torchaudio if it is installed.",
                           commands=[command("pip", "install", "--force-reinstall", "--no-deps",
                                             pin, "--index-url", url(torch_index(variant)))])],
                   details={"source": "torchvision/extension.py (_check_cuda_version)"})]
