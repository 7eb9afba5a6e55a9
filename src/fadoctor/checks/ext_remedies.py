"""Remedies for a compiled extension that is not flash-attention's (torchvision, torchaudio,
xformers, ...): its distribution's release built for the installed torch, from the right index."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.checks.classify import Diagnosis
from fadoctor.checks.remedies import remedy
from fadoctor.facts.binaries import BinaryAnalysis
from fadoctor.facts.model import Facts, Torch
from fadoctor.install.torch import torch_index
from fadoctor.report import Category, Remedy
from fadoctor.safety import shell
from fadoctor.safety.shell import command, requirement

_PIN = re.compile(r"^==\s*([0-9][\w.!+]*)$")
_VARIANT = re.compile(r"\+((?:cpu|cu\d+|rocm[\d.]+|xpu))$")


def _installed_torch(facts: Facts, torch: Optional[Torch]) -> Optional[str]:
    """torch's version as its distribution says (what a `torch==` requirement must match)."""
    packages = facts.packages.data
    dist = packages.get("torch") if packages else None
    return dist.version if dist else (torch.version if torch else None)


def _index(version: str) -> List[str]:
    variant = _VARIANT.search(version)
    return ["--index-url", shell.url(torch_index(variant.group(1)))] if variant else []


def distribution_remedies(binary: BinaryAnalysis, diagnosis: Diagnosis, facts: Facts,
                          torch: Optional[Torch]) -> List[Remedy]:
    dist, version = binary.file.distribution, binary.file.version
    installed = _installed_torch(facts, torch)
    if dist is None or installed is None:
        return [Remedy(summary="Rebuild or reinstall it for the installed torch "
                       f"({installed or 'unknown'}).")]
    pin = _PIN.match(binary.file.requires_torch or "")
    if diagnosis.category == Category.GLIBC_TOO_OLD:
        return [Remedy(summary=f"{dist} {version} was built on a newer Linux than this one: use a "
                       f"release of {dist} built for an older glibc, or build it here.")]
    def upgrade() -> List[str]:  # values from the target: validated, or no command
        return [command("pip", "install", "--upgrade", shell.name(dist or ""),
                        requirement("torch", installed), *_index(installed or ""))]

    if pin and pin.group(1).split("+")[0] != installed.split("+")[0]:
        return [remedy(f"{dist} {version} is built for torch {pin.group(1)} (its metadata pins "
                       f"torch=={pin.group(1)}), but torch {installed} is installed: install the "
                       f"{dist} release that pins this torch (pip picks it; torch stays).", upgrade)]
    if diagnosis.category == Category.TORCH_CPU_ONLY:
        return [remedy(f"{dist} {version} is a CUDA build and torch {installed} is CPU-only: "
                       f"install {dist}'s CPU build for this torch, or a CUDA build of torch.",
                       lambda: [command("pip", "install", "--force-reinstall", "--no-deps",
                                        requirement(dist or "", version), *_index(installed or ""))]
                       if "+" in (installed or "") else upgrade())]
    return [remedy(f"Install the {dist} build made for this torch ({installed}) and its CUDA "
                   "variant (pip picks the release; torch stays).", upgrade)]
