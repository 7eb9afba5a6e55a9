"""FAD206/FAD207: the collective smoke test's verdict per backend, and its bus bandwidths (pure)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Tuple

from fadoctor.checks.base import Outcome, Skip, info
from fadoctor.distributed.messages import phase_text, rank_text, size_text
from fadoctor.distributed.models import Collectives
from fadoctor.distributed.report import Bandwidth
from fadoctor.report import Category, Finding, Severity

if TYPE_CHECKING:
    from fadoctor.distributed.view import JobView

_VERB = {"timeout": "hung", "crash": "crashed", "exit": "exited", "error": "failed"}


def _belongs(phase: str, backend: str) -> bool:
    """Whether a test that stopped in `phase` stopped in this backend's part (gloo comes first)."""
    return phase.startswith("nccl") if backend == "nccl" else not phase.startswith("nccl")


def _failures(backend: str, failed: List[Tuple[int, Collectives]]) -> List[Finding]:
    groups: Dict[Tuple[str, str], List[Tuple[int, Collectives]]] = {}
    for rank, c in failed:
        assert c.failure is not None
        groups.setdefault((c.failure.kind.value, c.phase), []).append((rank, c))
    out = []
    for (kind, phase), members in groups.items():
        first = members[0][1].failure
        assert first is not None
        never = sorted({r for _, c in members for r in c.never_arrived or []})
        text = (f"{rank_text(r for r, _ in members)}: {phase_text(phase)} {_VERB.get(kind, kind)}"
                f" ({first.reason})")
        if never:
            text += f"; {rank_text(never)} never arrived there"
        out.append(Finding(severity=Severity.ERROR, category=Category.COLLECTIVE_FAILED,
                           message=text, subject=backend,
                           evidence={"ranks": [r for r, _ in members], "phase": phase,
                                     "never_arrived": never, "stderr_tail": first.stderr_tail,
                                     "traceback_tail": first.traceback_tail}))
    return out


def _wrong(backend: str, runs: List[Tuple[int, Collectives]]) -> List[Finding]:
    wrong: Dict[Tuple[str, str, int], List[int]] = {}
    for rank, c in runs:
        for op in c.ops:
            if op.backend == backend and not op.correct:
                wrong.setdefault((op.scope, op.op, op.bytes), []).append(rank)
    return [Finding(severity=Severity.ERROR, category=Category.COLLECTIVE_FAILED,
                    message=f"{op} of {size_text(size)} over {backend} ({scope}) gave a wrong "
                            f"result on {rank_text(ranks)}", subject=backend,
                    evidence={"ranks": ranks})
            for (scope, op, size), ranks in wrong.items()]


def bandwidth_findings(backend: str, rows: List[Bandwidth]) -> List[Finding]:
    """One line per group: bus bandwidth for each op and size, on the group's slowest rank."""
    scopes: Dict[str, List[Bandwidth]] = {}
    for row in rows:
        scopes.setdefault(row.scope, []).append(row)
    out = []
    for scope, group in scopes.items():
        where = "across the job" if scope == "job" else f"within {scope}"
        parts = [f"{b.op} {size_text(b.bytes)} {b.busbw_gbps:.2f}" for b in group]
        out.append(info(f"{backend} bus bandwidth {where} ({group[0].ranks} ranks), GB/s: "
                        + ", ".join(parts)))  # the rows themselves: JobReport.bandwidth
    return out


def check(backend: str) -> Callable[[JobView], Outcome]:
    def run(view: JobView) -> Outcome:
        runs = [(r.place.rank, r.collectives) for r in view.job.ranks
                if r.collectives is not None]
        if not runs:
            return Skip("not run (the rank agent was started with --no-collectives)")
        failed = [(rank, c) for rank, c in runs if c.failure and _belongs(c.phase, backend)]
        findings = _failures(backend, failed) + _wrong(backend, runs)
        if findings:
            return findings
        if backend == "nccl":
            earlier = [rank for rank, c in runs if c.failure is not None]
            if earlier:
                return Skip(f"not reached: the test stopped before NCCL on {rank_text(earlier)} "
                            "(FAD206)")
            reasons = [s.reason for _, c in runs for s in c.skipped if s.backend == backend]
            if reasons:  # the ranks decide together, so they skip for one reason
                return Skip(reasons[0])
        rows = [b for b in view.bandwidth if b.backend == backend]
        ran = sorted({rank for rank, c in runs if any(o.backend == backend for o in c.ops)})
        if not rows:
            return Skip(f"no rank ran a {backend} collective")
        return [info(f"all_reduce and all_gather over {backend} are right on "
                     f"{rank_text(ran)}", ranks=ran), *bandwidth_findings(backend, rows)]

    return run
