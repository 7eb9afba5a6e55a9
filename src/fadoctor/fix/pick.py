"""One plan pick and where it comes from: its provenance (tier and source, from the matrix's
wheel_sources), and the order picks rank in: by what they cost, then by provenance (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Tuple

from fadoctor.facts.model import Family
from fadoctor.install.torch import TorchBuild
from fadoctor.install.wheels import Wheel
from fadoctor.matrix import Matrix
from fadoctor.safety.shell import is_safe

Kind = Literal["wheel", "index", "hub", "build", "sdpa"]
# Said where the matrix has no wheel_sources section (an older matrix file): the tier alone.
_TIER_LABEL = {1: "official release", 2: "PyTorch's wheel index", 3: "Hugging Face kernels Hub",
               4: "community wheels (third-party)", 5: "source build", 6: "PyTorch SDPA"}


@dataclass(frozen=True)
class Provenance:
    """Where a pick's code comes from: tier 1 (official) to 6 (SDPA, inside torch)."""

    tier: int
    source: str  # a wheel_sources id
    label: str
    third_party: bool = False
    downloads_at_load: bool = False

    def __str__(self) -> str:
        return f"tier {self.tier}: {self.label}"


def provenance(matrix: Matrix, source: str, tier: int) -> Provenance:
    found = matrix.wheel_source(source)
    if found is None:
        return Provenance(tier, source, _TIER_LABEL[tier])
    return Provenance(found.tier, found.id, found.label, found.third_party,
                      found.downloads_at_load)


@dataclass(frozen=True)
class Pick:
    family: Optional[Family]  # None: PyTorch SDPA
    kind: Kind
    summary: str
    provenance: Provenance
    torch: Optional[TorchBuild] = None
    version: Optional[str] = None  # of the flash-attention package
    wheel: Optional[Wheel] = None
    url: Optional[str] = None  # the exact file installed, where it is one file
    commands: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()
    # Where the pick comes from: the matrix alone, or runs of the combination (`fix --observed`,
    # fadoctor.compat.observed): "inferred from the matrix", "observed working", "observed failing".
    evidence: str = "inferred from the matrix"

    def __post_init__(self) -> None:
        unsafe = [c for c in self.commands if not is_safe(c)]
        if unsafe:  # a bug: never shown
            raise ValueError(f"commands not built by fadoctor.safety.shell: {unsafe}")

    @property
    def changes_torch(self) -> bool:
        return not (self.torch is not None and self.torch.installed)


def rank(pick: Pick) -> Tuple[int, int, int]:
    """By cost first: nothing to compile before a compile (hours), then the installed torch
    before changing it; then by provenance tier (official first, third-party after the Hub). The
    sort is stable: FlashAttention-2 stays before -4, and -3, within a rank."""
    return (1 if pick.kind == "build" else 0), int(pick.changes_torch), pick.provenance.tier


__all__ = ["Kind", "Pick", "Provenance", "provenance", "rank"]
