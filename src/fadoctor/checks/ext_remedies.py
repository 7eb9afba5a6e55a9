"""Remedies for a compiled extension that is not flash-attention's (torchvision, torchaudio,
xformers, ...): its distribution's release built for the installed torch, from the right index."""

from __future__ import annotations

from typing import List, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from fadoctor.checks.classify import Diagnosis
from fadoctor.checks.remedies import remedy
from fadoctor.facts.binaries import BinaryAnalysis
from fadoctor.facts.model import Facts, Torch
from fadoctor.install.torch import index_args
from fadoctor.report import Category, Remedy
from fadoctor.safety import shell
from fadoctor.safety.shell import command, requirement


def _torch_spec(text: Optional[str]) -> Optional[SpecifierSet]:
    """The torch requirement its metadata states (==2.5.1, >=2.4,<2.6), read whole: a `>=`
    pin is a pin too."""
    try:
        return SpecifierSet(text) if text else None
    except InvalidSpecifier:
        return None


def _installed_torch(facts: Facts, torch: Optional[Torch]) -> Optional[str]:
    """torch's version as its distribution says (what a `torch==` requirement must match)."""
    packages = facts.packages.data
    dist = packages.get("torch") if packages else None
    return dist.version if dist else (torch.version if torch else None)


def distribution_remedies(binary: BinaryAnalysis, diagnosis: Diagnosis, facts: Facts,
                          torch: Optional[Torch]) -> List[Remedy]:
    dist, version = binary.file.distribution, binary.file.version
    installed = _installed_torch(facts, torch)
    if dist is None or installed is None:
        return [Remedy(summary="Rebuild or reinstall it for the installed torch "
                       f"({installed or 'unknown'}).")]
    wanted = _torch_spec(binary.file.requires_torch)
    if diagnosis.category == Category.GLIBC_TOO_OLD:
        return [Remedy(summary=f"{dist} {version} was built on a newer Linux than this one: use a "
                       f"release of {dist} built for an older glibc, or build it here.")]

    def another() -> List[str]:  # values from the target: validated, or no command
        # Another release of it, with the installed torch pinned: the resolver picks the newest
        # one whose own torch pin this torch meets; torch itself never moves.
        return [command("pip", "install", "--upgrade",
                        requirement(dist or "", version, op="!=") if version else
                        shell.name(dist or ""), requirement("torch", installed),
                        *index_args(installed or ""))]

    # fadoctor cannot know offline whether such a release exists: say what pip's refusal means.
    none_built = Remedy(summary=f"If pip answers ResolutionImpossible, no {dist} release is built "
                        f"for torch {installed}: uninstall {dist}, or use a torch it was built for.")
    if wanted is not None and not wanted.contains(installed.split("+")[0], prereleases=True):
        return [remedy(f"{dist} {version} is built for torch{wanted} (its metadata requires "
                       f"torch{wanted}), but torch {installed} is installed: install the "
                       f"{dist} release made for this torch (pip picks it; torch stays).",
                       another), none_built]
    if diagnosis.category == Category.TORCH_CPU_ONLY:
        return [remedy(f"{dist} {version} is a CUDA build and torch {installed} is CPU-only: "
                       f"install {dist}'s CPU build for this torch, or a CUDA build of torch.",
                       lambda: [command("pip", "install", "--force-reinstall", "--no-deps",
                                        requirement(dist or "", version), *index_args(installed or ""))]
                       if "+" in (installed or "") else another())]
    return [remedy(f"Install the {dist} build made for this torch ({installed}) and its CUDA "
                   "variant (pip picks the release; torch stays).", another), none_built]
