"""The job's own checks (FAD2xx): small pure functions over every rank's facts, listed once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

from fadoctor.checks import ALL_CHECKS, BY_KEY
from fadoctor.checks.base import Check, Outcome, Skip, info
from fadoctor.distributed import collectives
from fadoctor.distributed.messages import (
    DIFFERENCE_REMEDY,
    difference_text,
    has,
    missing_text,
    rank_text,
)
from fadoctor.distributed.models import MissingRank
from fadoctor.distributed.view import JobView
from fadoctor.facts.model import Facts
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity


def _per_rank(facts: Facts, matrix: Matrix) -> Outcome:
    return Skip("a check of the whole job: `check --distributed` or `--facts-dir` runs it")


@dataclass(frozen=True)
class JobCheck(Check):
    """A check of the whole job: `explain`, `--ignore` and JUnit treat it as any other check;
    it reads every rank's facts (`job`) rather than one environment's (`run`)."""

    job: Callable[[JobView], Outcome]


def _job(check_id: str, name: str, title: str, doc: str, job: Callable[[JobView], Outcome]
         ) -> JobCheck:
    return JobCheck(check_id, name, title, doc, _per_rank, job)


def check_reported(view: JobView) -> Outcome:
    job = view.job
    by_state: Dict[str, List[MissingRank]] = {}
    for m in job.missing:
        by_state.setdefault(m.state, []).append(m)
    findings = [Finding(severity=Severity.ERROR, category=Category.RANK_MISSING,
                        message=missing_text(state, ms, job.interrupted),
                        evidence={"ranks": [m.rank for m in ms], "state": state,
                                  "silent_s": [m.silent_s for m in ms]})
                for state, ms in by_state.items()]
    unreachable = [r.place.rank for r in job.ranks if r.store_error]
    if unreachable:
        first = next(r for r in job.ranks if r.store_error)
        findings.append(Finding(
            severity=Severity.WARNING, category=Category.RANK_MISSING,
            message=f"{rank_text(unreachable)} could not reach the job's store "
                    f"({first.store_error}); their records come from the facts folder",
            evidence={"ranks": unreachable}))
    if findings:
        return findings
    nodes = {r.place.node for r in job.ranks}
    return [info(f"all {job.world_size} ranks reported, from {len(nodes)} node(s)",
                 world_size=job.world_size)]


def differing(group: str, what: str) -> Callable[[JobView], Outcome]:
    """A check that reports every difference of one group (software, hardware, environment)."""

    def check(view: JobView) -> Outcome:
        if len(view.job.ranks) < 2:
            return Skip(f"needs the facts of two ranks or more ({len(view.job.ranks)} reported)")
        found = [d for d in view.differences if d.group == group]
        if not found:
            return [info(f"all {len(view.job.ranks)} ranks agree on {what}")]
        findings = [Finding(severity=d.severity, category=Category.RANKS_DIFFER,
                            message=difference_text(d), subject=d.key,
                            evidence={"variants": [v.model_dump() for v in d.variants]})
                    for d in found]
        problems = [i for i, f in enumerate(findings) if f.severity != Severity.INFO]
        if problems:  # one remedy for the group, after its last problem
            last = problems[-1]
            findings[last] = findings[last].model_copy(
                update={"remedies": [Remedy(summary=DIFFERENCE_REMEDY[group])]})
        return findings

    return check


def check_gpus(view: JobView) -> Outcome:
    devices = [(r.place.rank, r.place.host, r.collectives.device) for r in view.job.ranks
               if r.collectives is not None and r.collectives.device is not None]
    if not devices:
        return Skip("needs each rank's GPU, which the collective test reports (not run, or it "
                    "failed before torch was imported)")
    if all(d.index is None for _, _, d in devices) and not any(
            r.facts.driver.data and r.facts.driver.data.present for r in view.job.ranks):
        return Skip(f"no rank has a GPU (a CPU-only job?): {devices[0][2].error}")
    findings: List[Finding] = []
    without = [(rank, d.error) for rank, _, d in devices if d.index is None]
    if without:
        findings.append(Finding(
            severity=Severity.ERROR, category=Category.GPU_ASSIGNMENT,
            message=f"{rank_text(r for r, _ in without)} {has(len(without))} no GPU of "
                    f"{'its' if len(without) == 1 else 'their'} own: {without[0][1]}",
            evidence={"ranks": [r for r, _ in without]}))
    shared: Dict[Tuple[str, str], List[int]] = {}
    for rank, host, d in devices:
        if d.index is not None:
            shared.setdefault((host, d.uuid or d.pci or str(d.index)), []).append(rank)
    for (host, gpu), ranks in shared.items():
        if len(ranks) > 1:
            findings.append(Finding(
                severity=Severity.ERROR, category=Category.GPU_ASSIGNMENT,
                message=f"{rank_text(ranks)} share one GPU ({gpu} on {host}): NCCL refuses "
                        "two ranks on one device; give each local rank its own "
                        "(LOCAL_RANK, CUDA_VISIBLE_DEVICES)", evidence={"ranks": ranks}))
    return findings or [info(f"each of the {len(devices)} ranks has a GPU of its own")]


JOB_CHECKS: Tuple[JobCheck, ...] = (
    _job("FAD201", "ranks-reported", "Every rank of the job reported its facts",
             "Rank 0 gathers every rank's record over the job's c10d store (gloo's transport, "
             "never NCCL). A rank that never reaches the store, falls silent (its heartbeat "
             "stops: killed, crashed, its node gone) or outlives the deadline is named here.",
             check_reported),
    _job("FAD202", "same-software", "Every rank runs the same software",
             "Compares Python, the torch build (version, CUDA, C++ ABI, git commit), NCCL, each "
             "flash-attention family, the sha256 of each compiled extension, and the other "
             "relevant distributions across ranks. Ranks that run other code fail at import, "
             "crash in a kernel or hang in the first collective.",
             differing("software", "Python, torch, NCCL, flash-attention and the other packages")),
    _job("FAD203", "same-hardware", "Every rank has the same kind of GPU and driver",
             "Compares each rank's own GPU (model and compute capability) and its node's driver "
             "and CUDA driver version.",
             differing("hardware", "GPU model and driver")),
    _job("FAD204", "same-environment", "The variables that steer CUDA, torch and NCCL agree",
             "Compares the environment variables that change what torch, flash-attention, NCCL "
             "and gloo do (NCCL_*, TORCH_NCCL_*, CUDA_*, LD_LIBRARY_PATH, PYTHONPATH, ...). "
             "CUDA_VISIBLE_DEVICES may differ by design; FAD205 judges the GPUs it leaves.",
             differing("environment", "the environment variables that matter")),
    _job("FAD205", "gpu-per-rank", "Each rank has a GPU of its own",
             "Each rank uses the LOCAL_RANK-th GPU torch sees, as training code does. Fails when "
             "there is none (CUDA_VISIBLE_DEVICES hides it, fewer GPUs than ranks) or when two "
             "ranks of one host land on the same GPU (by UUID).",
             check_gpus),
    _job("FAD206", "gloo-collectives", "all_reduce and all_gather work over gloo",
             "Every rank joins a gloo group and runs all_reduce and all_gather on CPU tensors, "
             "checking the result on every rank. A rank that hangs or never arrives is named "
             "from the store, where each rank marks each phase it enters.",
             collectives.check("gloo")),
    _job("FAD207", "nccl-collectives", "all_reduce and all_gather work over NCCL",
             "Every rank runs all_reduce and all_gather over NCCL on its own GPU, for several "
             "sizes, across the job and within each node, checks the result on every rank and "
             "reports the bus bandwidth as nccl-tests defines it (doc/PERFORMANCE.md: "
             "busbw = algbw * 2(n-1)/n for all_reduce, algbw * (n-1)/n for all_gather).",
             collectives.check("nccl")),
)

JOB_BY_KEY: Dict[str, JobCheck] = {**{c.id: c for c in JOB_CHECKS},
                                   **{c.name: c for c in JOB_CHECKS}}
# Every check `explain` lists and a key (--ignore, --only) may name: one environment's, the job's.
EVERY_CHECK: Tuple[Check, ...] = (*ALL_CHECKS, *JOB_CHECKS)
EVERY_KEY: Dict[str, Check] = {**BY_KEY, **JOB_BY_KEY}
