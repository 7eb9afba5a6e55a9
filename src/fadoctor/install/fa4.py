"""FlashAttention-4 to install: the newest release fadoctor's matrix knows, pinned exactly (every
4.x is a pre-release, which pip and uv skip unless pinned or allowed), with the extra the
torch's CUDA major asks for (pure, over the matrix)."""

from __future__ import annotations

from typing import Optional

from packaging.version import Version

from fadoctor.facts.model import Family
from fadoctor.matrix import Matrix
from fadoctor.safety.shell import requirement

DISTRIBUTION = "flash-attn-4"


def newest_fa4(matrix: Matrix) -> Optional[Version]:
    """The newest release published as flash-attn-4 (beta0-2 were flash-attn4)."""
    return max((r.version for r in matrix.fa4_releases if r.distribution == DISTRIBUTION),
               default=None)


def fa4_extra(matrix: Matrix, cuda: Optional[Version]) -> Optional[str]:
    """The extra FA4 documents for this CUDA major ([cu13]), if any."""
    return next((r.extra for r in matrix.requirements(Family.FA4)
                 if r.extra and cuda is not None and r.cuda_major == cuda.major), None)


def fa4_requirement(matrix: Matrix, cuda: Optional[Version]) -> str:
    """`flash-attn-4[cu13]==4.0.0bN`: pinned, since an unpinned pre-release never installs."""
    extra = fa4_extra(matrix, cuda)
    return requirement(DISTRIBUTION, newest_fa4(matrix), extras=[extra] if extra else [])
