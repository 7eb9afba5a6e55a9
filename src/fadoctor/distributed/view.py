"""What the job checks read: the gathered facts and what was derived from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

from fadoctor.distributed.models import JobFacts
from fadoctor.distributed.report import Bandwidth, Difference


@dataclass(frozen=True)
class JobView:
    """What the job checks read: the gathered facts and what was derived from them."""

    job: JobFacts
    differences: List[Difference]
    bandwidth: List[Bandwidth]
