"""The report on a whole job: the merged checks, what differs across ranks, bandwidths, each rank's
own report. What the distributed renderers turn into text."""

from __future__ import annotations

from typing import List, Literal, Optional

from fadoctor.distributed.models import MissingRank
from fadoctor.report import Frozen, Report, Severity

JOB_REPORT_SCHEMA_VERSION = 1


class Variant(Frozen):
    value: str  # "unknown" where the rank could not tell
    ranks: List[int]
    nodes: List[str]


class Difference(Frozen):
    """A property whose value is not the same on every rank."""

    key: str  # "torch", "extension flash_attn_2_cuda", "env NCCL_IB_HCA", ...
    group: Literal["software", "hardware", "environment"]
    severity: Severity
    variants: List[Variant]  # the most common first


class Bandwidth(Frozen):
    """One collective at one size over one group, timed on its slowest rank."""

    backend: str
    scope: str  # "job", or a node
    op: str
    bytes: int
    ranks: int
    seconds: float
    slowest_rank: int
    algbw_gbps: float
    busbw_gbps: float
    correct: bool  # the result was right on every rank that ran it


class NodeSummary(Frozen):
    node: str
    hosts: List[str]
    ranks: List[int]


class RankReport(Frozen):
    rank: int
    node: str
    host: str
    device: Optional[str] = None
    report: Report


class JobReport(Frozen):
    schema_version: int = JOB_REPORT_SCHEMA_VERSION
    kind: Literal["distributed"] = "distributed"
    fadoctor_version: str
    world_size: int
    nodes: List[NodeSummary]
    missing: List[MissingRank] = []
    differences: List[Difference] = []
    bandwidth: List[Bandwidth] = []
    merged: Report  # the job's checks, then each rank check merged: what junit/github render
    ranks: List[RankReport]  # every rank's own report
