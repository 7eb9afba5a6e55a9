"""What each attention implementation supports of a model's needs: features by release, head-dim
limits, and the backward head-dim restrictions some GPUs had."""


from typing import List, Literal

from packaging.specifiers import SpecifierSet
from pydantic import field_validator

from fadoctor.matrix.base import Entry, _specifier

# fa2/fa3/fa4: the flash-attention families (versions are theirs); sdpa_*: PyTorch's SDPA
# backends (versions are torch's).
Implementation = Literal["fa2", "fa3", "fa4", "sdpa_flash", "sdpa_efficient", "sdpa_cudnn"]
Feature = Literal["sliding_window", "softcap", "alibi", "gqa"]


class FeatureSupport(Entry):
    """`implementation` supports `feature` in these `versions`; a release of a family whose every
    tag was read, outside `versions`, does not (`exhaustive`)."""

    implementation: Implementation
    feature: Feature
    versions: SpecifierSet
    exhaustive: bool = False  # True: versions outside the range lack the feature
    how: str = ""  # the parameter or mechanism: window_size=, softcap=, attn_mask

    _s = field_validator("versions", mode="before")(_specifier)


class HeadDimLimit(Entry):
    """The largest head dim (forward and backward) in these versions, on GPUs of these compute
    capabilities ([] = all it runs on)."""

    implementation: Implementation
    versions: SpecifierSet
    max_head_dim: int
    ccs: List[str] = []
    also: List[int] = []  # larger head dims accepted as dedicated shapes (FA4 on SM100: 256)

    _s = field_validator("versions", mode="before")(_specifier)


class BackwardRestriction(Entry):
    """Training (backward) with a head dim in (above, upto] fails on these GPUs in these
    versions; `dropout_only`: only with attention dropout."""

    implementation: Implementation
    versions: SpecifierSet
    above: int
    upto: int
    dropout_only: bool = False
    ccs: List[str]

    _s = field_validator("versions", mode="before")(_specifier)
