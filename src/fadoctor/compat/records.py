"""Reports (`check --format json`) turned into records, and the files `compat` reads: a report, a
record written by `compat record`, or a compatibility file. Pure, but for `read`."""

import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from pydantic import ValidationError

from fadoctor.compat.model import Bench, Combination, CompatFile, Kernel, Record
from fadoctor.errors import InputError, invalid
from fadoctor.facts.validation import problems
from fadoctor.report import CheckResult, FamilyRef, Report, Severity
from fadoctor.safety.textfile import read_text, shown

KERNEL_CHECK = "FAD140"
# What a runner without a GPU cannot judge: a combination run there (`check --static` on a CPU
# runner) is judged by whether it installs, links and imports, not by the GPU it lacks.
NEEDS_A_GPU = ("FAD101", "FAD104", "FAD105", "FAD106", "FAD112", "FAD120", "FAD133", "FAD140")
# A target's cases that say its kernel computed wrong or did not run (FAD140's evidence).
_BROKEN = {"wrong", "nonfinite", "error"}  # facts.kernels.CaseStatus


def records_of(report: Report, runner: Optional[str] = None, ran_at: Optional[str] = None,
               extras: Sequence[str] = ()) -> List[Record]:
    """One record per installed flash-attention family (one with no family where none is): the
    report's verdict, its checks' statuses and its kernel smoke results."""
    stack = report.stack
    if stack is None:
        raise InputError("the report has no 'stack' section: it was written by a fadoctor "
                         "older than `compat`; run `check --format json` again")
    judged = report.checks if stack.gpu_archs else [c for c in report.checks
                                                     if c.id not in NEEDS_A_GPU]
    worst = _first_error(judged) or (None if stack.torch else
                                     "torch is not installed in the examined environment")
    base = dict(python=stack.python, torch=stack.torch, torch_cuda=stack.torch_cuda,
                cxx11_abi=stack.cxx11_abi, machine=stack.machine, gpu_archs=stack.gpu_archs,
                extras=sorted(extras))
    families: List[Optional[FamilyRef]] = [*stack.families] or [None]
    return [Record(
        combination=Combination(**base, family=f.family if f else None,
                                family_distribution=f.distribution if f else None,
                                family_version=f.version if f else None),
        verdict="fails" if worst else "works", reason=worst,
        checks={c.id: c.status.value for c in report.checks},
        kernels=_kernels(report.checks), fadoctor_version=report.fadoctor_version,
        data_date=report.matrix_date, ran_at=ran_at,
        runner=runner or _described(report)) for f in families]


def with_bench(records: List[Record], path: Path) -> List[Record]:
    """`records` with the rows of a `fadoctor bench --format json` report run on the same
    environment (its timings per target, and the shape they were taken at)."""
    from fadoctor.bench.run import BenchReport

    try:
        data = json.loads(read_text(path, "bench report"))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{shown(path)} is not JSON: {exc}") from None
    if not isinstance(data, dict) or "rows" not in data:
        raise InputError(f"{shown(path)} is not a `fadoctor bench --format json` report")
    try:
        bench = BenchReport.model_validate(data)
    except ValidationError as exc:
        raise invalid(shown(path), problems(exc, data)) from None
    rows = [Bench(target=r.target, status=r.status, fwd=r.fwd, fwd_bwd=r.fwd_bwd) for r in bench.rows]
    return [r.model_copy(update={"bench": rows, "bench_shape": bench.shape.text()}) for r in records]


def merged(inputs: Iterable[List[Record]]) -> CompatFile:
    """Every record once, sorted (torch, family, Python, GPU); a later duplicate replaces an
    earlier one (the same combination run again)."""
    by_key: Dict[str, Record] = {}
    for records in inputs:
        for record in records:
            by_key[record.combination.model_dump_json() + (record.runner or "")] = record
    return CompatFile(records=sorted(by_key.values(), key=_order))


def read(path: Path) -> List[Record]:
    """The records in a report, a record file or a compatibility file."""
    text = read_text(path, "report")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{shown(path)} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{shown(path)} is not a report, a record or a compatibility file")
    try:
        if data.get("kind") == "fadoctor-compatibility":
            return list(CompatFile.model_validate(data).records)
        if "combination" in data:
            return [Record.model_validate(data)]
        if "checks" in data and "summary" in data:
            return records_of(Report.model_validate(data))
    except ValidationError as exc:
        raise invalid(shown(path), problems(exc, data)) from None
    raise InputError(f"{shown(path)} is not a report, a record or a compatibility file")


def _first_error(checks: List[CheckResult]) -> Optional[str]:
    for check in checks:
        for finding in check.findings:
            if finding.severity == Severity.ERROR:
                return f"{check.id}: {finding.message}"
    return None


def _kernels(checks: List[CheckResult]) -> List[Kernel]:
    out: List[Kernel] = []
    for check in checks:
        if check.id != KERNEL_CHECK:
            continue
        for finding in check.findings:
            targets = finding.evidence.get("targets")
            if isinstance(targets, dict):
                out += [Kernel(target=str(t), status=_kernel_status(v)) for t, v in targets.items()]
    return sorted({k.target: k for k in out}.values(), key=lambda k: k.target)


def _kernel_status(target: Any) -> str:
    if not isinstance(target, dict):
        return "unknown"
    if target.get("skipped"):
        return "skipped"
    found = target.get("cases")
    cases: Dict[str, Any] = found if isinstance(found, dict) else {}
    if any(status in _BROKEN for status in cases):
        return "failed"
    return "passed" if cases.get("passed") else "none"


def _described(report: Report) -> Optional[str]:
    env = report.environment
    gpus = ", ".join(env.gpus) or "no GPU"
    return f"{env.platform or 'unknown platform'}; {gpus}" if env.platform else None


def _order(record: Record) -> tuple:  # type: ignore[type-arg]
    c = record.combination
    return (c.torch or "", c.family or "", c.family_version or "", c.python or "",
            ",".join(c.gpu_archs), record.runner or "")
