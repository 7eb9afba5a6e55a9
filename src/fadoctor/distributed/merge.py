"""One check's results on many ranks as one result: identical ranks once, the others by rank set."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from fadoctor.checks.base import status_of
from fadoctor.distributed.messages import rank_text
from fadoctor.report import Category, CheckResult, Environment, Finding, Severity, Status

Signature = Tuple[str, Optional[str], Tuple[Tuple[str, str, str], ...]]


def _signature(result: CheckResult) -> Signature:
    return (result.status.value, result.skipped_reason,
            tuple((f.severity.value, f.category.value, f.message) for f in result.findings))


def merge_check(results: Sequence[Tuple[int, CheckResult]]) -> CheckResult:
    """The check on every rank: as is when all agree, else each group's findings by rank set."""
    groups: Dict[Signature, List[int]] = {}
    first: Dict[Signature, CheckResult] = {}
    for rank, result in results:
        key = _signature(result)
        groups.setdefault(key, []).append(rank)
        first.setdefault(key, result)
    if len(groups) == 1:
        return results[0][1]
    ordered = sorted(groups, key=lambda k: (-_rank(first[k].status), groups[k]))
    findings: List[Finding] = []
    for key in ordered:
        result, ranks = first[key], groups[key]
        findings.extend(_group_findings(result, ranks))
    template = results[0][1]
    if all(first[k].status == Status.SKIPPED for k in groups):
        reason = "; ".join(f"{rank_text(groups[k])}: {first[k].skipped_reason}" for k in ordered)
        return template.model_copy(update={"skipped_reason": reason})
    return CheckResult(id=template.id, name=template.name, title=template.title,
                       status=status_of(findings), findings=findings)


def _rank(status: Status) -> int:
    return {Status.FAILED: 3, Status.WARNING: 2, Status.PASSED: 1, Status.SKIPPED: 0}[status]


def _group_findings(result: CheckResult, ranks: List[int]) -> List[Finding]:
    prefix = f"{rank_text(ranks)}: "
    if result.status == Status.SKIPPED:
        return [Finding(severity=Severity.INFO, category=Category.INFO,
                        message=f"{prefix}skipped: {result.skipped_reason}",
                        evidence={"ranks": ranks})]
    if not result.findings:
        return [Finding(severity=Severity.INFO, category=Category.INFO,
                        message=f"{prefix}passed", evidence={"ranks": ranks})]
    return [f.model_copy(update={"message": prefix + f.message,
                                 "evidence": {**f.evidence, "ranks": ranks}})
            for f in result.findings]


def _merge_values(values: Sequence[Tuple[int, str]]) -> List[str]:
    groups: Dict[str, List[int]] = {}
    for rank, value in values:
        groups.setdefault(value, []).append(rank)
    if len(groups) == 1:
        return list(groups)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1]))
    return [f"{value or 'none'} ({rank_text(ranks)})" for value, ranks in ordered]


def merge_environment(envs: Sequence[Tuple[int, Environment]]) -> Environment:
    """The report header over many ranks: a value once when all agree, else each by rank set."""
    def one(field: str) -> Optional[str]:
        merged = _merge_values([(r, getattr(e, field) or "unknown") for r, e in envs])
        return "; ".join(merged)

    def many(field: str) -> List[str]:
        joined = [(r, ", ".join(getattr(e, field))) for r, e in envs]
        merged = _merge_values(joined)
        return merged if len(merged) > 1 else list(getattr(envs[0][1], field))

    return Environment(python=one("python"), platform=one("platform"), torch=one("torch"),
                       driver=one("driver"), gpus=many("gpus"),
                       flash_attention=many("flash_attention"))
