"""`evaluate_job(job, matrix) -> JobReport`: pure; the job's checks, then every rank's, merged."""

from __future__ import annotations

from functools import partial
from typing import AbstractSet, Dict, List

from fadoctor import __version__
from fadoctor.checks import ALL_CHECKS
from fadoctor.distributed.bandwidth import table
from fadoctor.distributed.checks import JOB_CHECKS
from fadoctor.distributed.compare import differences
from fadoctor.distributed.merge import merge_check, merge_environment
from fadoctor.distributed.models import JobFacts, RankFacts
from fadoctor.distributed.report import JobReport, NodeSummary, RankReport
from fadoctor.distributed.view import JobView
from fadoctor.evaluate import checked, evaluate, summarize
from fadoctor.facts.files import identity
from fadoctor.matrix import Matrix
from fadoctor.report import Report


def evaluate_job(job: JobFacts, matrix: Matrix, ignore: AbstractSet[str] = frozenset()
                 ) -> JobReport:
    reports = rank_reports(job, matrix, ignore)
    view = JobView(job=job, differences=differences(job), bandwidth=table(job))
    results = [checked(c.id, c.name, c.title, partial(c.job, view))
               for c in JOB_CHECKS if c.id not in ignore and c.name not in ignore]
    ranked = sorted(reports.items())
    for check in ALL_CHECKS:
        per_rank = [(rank, r) for rank, report in ranked for r in report.checks
                    if r.id == check.id]
        if per_rank:
            results.append(merge_check(per_rank))
    first = job.ranks[0].facts
    merged = Report(fadoctor_version=__version__, matrix_date=matrix.data_date, target=first.target,
                    environment=merge_environment([(k, r.environment) for k, r in ranked]),
                    summary=summarize(results), checks=results)
    return JobReport(fadoctor_version=__version__, world_size=job.world_size,
                     nodes=_nodes(job), missing=job.missing, differences=view.differences,
                     bandwidth=view.bandwidth, merged=merged,
                     ranks=[_rank_report(r, reports[r.place.rank]) for r in job.ranks])


def rank_reports(job: JobFacts, matrix: Matrix, ignore: AbstractSet[str]) -> Dict[int, Report]:
    """Each rank's report; ranks with the same facts (timings aside) are evaluated once."""
    seen: Dict[str, Report] = {}
    out: Dict[int, Report] = {}
    for rank in job.ranks:
        key = identity(rank.facts)
        if key not in seen:
            seen[key] = evaluate(rank.facts, matrix, ignore)
        out[rank.place.rank] = seen[key]
    return out


def _nodes(job: JobFacts) -> List[NodeSummary]:
    nodes: Dict[str, List[RankFacts]] = {}
    for rank in job.ranks:
        nodes.setdefault(rank.place.node, []).append(rank)
    return [NodeSummary(node=node, hosts=sorted({r.place.host for r in ranks}),
                        ranks=sorted(r.place.rank for r in ranks))
            for node, ranks in sorted(nodes.items(), key=lambda kv: min(
                r.place.rank for r in kv[1]))]


def _rank_report(rank: RankFacts, report: Report) -> RankReport:
    device = rank.collectives.device if rank.collectives else None
    text = None
    if device is not None:
        text = (f"cuda:{device.index} {device.name} (sm_{(device.capability or '?').replace('.', '')})"
                if device.index is not None else f"none: {device.error}")
    return RankReport(rank=rank.place.rank, node=rank.place.node, host=rank.place.host,
                      device=text, report=report)
