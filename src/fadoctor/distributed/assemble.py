"""Turn the rank agent's raw records (fadoctor.in_target.rank) into `JobFacts` (pure)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from pydantic import ValidationError

from fadoctor import __version__
from fadoctor.collect.assemble import assemble
from fadoctor.collect.target import TargetChoice
from fadoctor.distributed.models import (
    Collectives,
    ExtensionHash,
    JobFacts,
    MissingRank,
    RankFacts,
    RankPlace,
)
from fadoctor.errors import InputError, invalid
from fadoctor.facts.model import Driver, Facts, Failure, FailureKind, Probe
from fadoctor.in_target.place import MAX_WORLD
from fadoctor.in_target.place import problems as place_problems
from fadoctor.in_target.rank import GATHER_FORMAT, RECORD_FORMAT
from fadoctor.in_target.registry import names
from fadoctor.probes.driver import parse_smi_csv, procfs_version
from fadoctor.probes.runner import StageFailure, StageOutcome
from fadoctor.safety.inert import one_line

# What a record that is not fadoctor's own can hold instead of what the models expect.
MALFORMED = (ValidationError, KeyError, TypeError, AttributeError, ValueError, OverflowError)


def consistent(job: JobFacts, where: str) -> JobFacts:
    """The job, or an InputError naming every way its records contradict one another: a rank
    twice, ranks that disagree on the world size, a rank outside it, no ranks at all, a rank's
    place that cannot be (a local rank outside its node, a port that is not one)."""
    problems: List[str] = []
    for rank in job.ranks:  # rank and world size are held against the job's below
        place = rank.place.model_dump(include={"local_rank", "local_world_size", "node_rank",
                                               "master_port"})
        problems += [f"rank {rank.place.rank}: {p}" for p in place_problems(
            {**place, "world_size": min(max(job.world_size, 1), MAX_WORLD)})]
    del problems[10:]  # the first ten name the fault; a world of them would only repeat it
    if not 1 <= job.world_size <= MAX_WORLD:
        problems.append(f"world_size {job.world_size}: a job has 1 to {MAX_WORLD} ranks")
    seen: Dict[int, int] = {}
    for rank in job.ranks:
        seen[rank.place.rank] = seen.get(rank.place.rank, 0) + 1
    twice = sorted(r for r, n in seen.items() if n > 1)
    if twice:
        problems.append(f"rank {', '.join(map(str, twice[:10]))} reported more than once")
    sizes = sorted({r.place.world_size for r in job.ranks} | {job.world_size})
    if len(sizes) > 1:
        problems.append(f"the ranks disagree on the world size: {', '.join(map(str, sizes[:10]))}")
    outside = sorted({r.place.rank for r in job.ranks if not 0 <= r.place.rank < job.world_size}
                     | {m.rank for m in job.missing if not 0 <= m.rank < job.world_size})
    if outside:
        problems.append(f"rank {', '.join(map(str, outside[:10]))} is outside a world of "
                        f"{job.world_size}")
    both = sorted(set(seen) & {m.rank for m in job.missing if not m.record_in_folder})
    if both:
        problems.append(f"rank {', '.join(map(str, both[:10]))} both reported and missing")
    if not job.ranks:
        problems.append("no rank reported")
    if problems:
        raise invalid(f"the job's records in {where}", problems)
    return job


def job_from_gather(raw: Mapping[str, Any], where: str) -> JobFacts:
    """The facts of the job from rank 0's `gathered.json`."""
    if raw.get("format") != GATHER_FORMAT:
        raise InputError(f"{where} is not a gathered facts file (format {raw.get('format')!r}, "
                         f"expected {GATHER_FORMAT})")
    try:
        world = raw["world_size"]
        if not isinstance(world, int) or not 1 <= world <= MAX_WORLD:
            raise ValueError(f"world_size {world!r}: a job has 1 to {MAX_WORLD} ranks")
        listed, gone = raw.get("ranks") or [], raw.get("missing") or []
        if not isinstance(listed, list) or not isinstance(gone, list) or len(listed) + len(
                gone) > MAX_WORLD:
            raise ValueError(f"ranks and missing must be lists of at most {MAX_WORLD} in all")
        ranks = [rank_facts(r if isinstance(r, dict) else {}, where) for r in listed]
        missing = [_missing(m) for m in gone]
        return JobFacts(fadoctor_version=__version__, world_size=raw["world_size"],
                        run_id=raw.get("run_id"), ranks=ranks, missing=missing,
                        interrupted=raw.get("interrupted"), seconds=raw.get("seconds"),
                        gather_seconds=raw.get("gather_seconds"))
    except MALFORMED as exc:
        raise InputError(f"{where} is malformed: {_first_error(exc)}") from None


def job_from_records(records: List[Mapping[str, Any]], where: str) -> JobFacts:
    """The facts of the job from the ranks' own `rank-NNNNN.json` files (no gathered.json)."""
    ranks = sorted((rank_facts(r, where) for r in records), key=lambda r: r.place.rank)
    world = max((r.place.world_size for r in ranks), default=0)
    if not 1 <= world <= MAX_WORLD:  # the ranks missing are listed: bounded work
        raise InputError(f"{where}: world_size {world}: a job has 1 to {MAX_WORLD} ranks")
    have = {r.place.rank for r in ranks}
    missing = [MissingRank(rank=n, state="no_record") for n in range(world) if n not in have]
    return JobFacts(fadoctor_version=__version__, world_size=world, ranks=ranks, missing=missing)


def rank_facts(raw: Mapping[str, Any], where: str) -> RankFacts:
    """One rank's record as facts: its stages assembled as `fadoctor check` assembles them."""
    if raw.get("format") != RECORD_FORMAT:
        raise InputError(f"{where}: a rank record of format {raw.get('format')!r}, expected "
                         f"{RECORD_FORMAT}")
    try:
        place = RankPlace.model_validate(raw["identity"])
        outcomes = _outcomes(raw.get("stages") or {}, names())
        target = TargetChoice(python=raw["python"], chosen_by="current")
        facts = assemble(target, outcomes, driver_probe(raw.get("driver")))
        facts = with_kernels(facts, raw.get("kernels"))
        return RankFacts(
            place=place, facts=facts, collectives=_collectives(raw.get("collective")),
            extension_hashes=[ExtensionHash.model_validate(h) for h in raw.get("extensions") or []],
            environment=raw.get("environment") or {}, store_error=raw.get("store_error"),
            seconds=raw.get("seconds"))
    except MALFORMED as exc:
        who = raw.get("identity")
        rank = who.get("rank", "?") if isinstance(who, dict) else "?"
        raise InputError(f"{where}: the record of rank {one_line(str(rank))[:20]} is malformed: "
                         f"{one_line(_first_error(exc))[:300]}") from None


def with_kernels(facts: Facts, raw: Optional[Mapping[str, Any]]) -> Facts:
    """The rank's attention smoke tests (run on its own GPU) in its facts, as `check` has them."""
    if not raw:
        return facts
    from fadoctor.probes.kernels import KernelOptions
    from fadoctor.probes.kernels import assemble as kernel_facts

    outcomes = _outcomes(raw.get("stages") or {}, names(groups=("smoke",)), required=False)
    update = kernel_facts(outcomes, KernelOptions(smoke=raw["smoke"]), raw.get("skipped"))
    timings = {**facts.timings, **{stage: o.seconds for stage, o in outcomes.items()}}
    return facts.model_copy(update={**update, "timings": timings})


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return f"{type(exc).__name__}: {exc}"


def _outcomes(stages: Mapping[str, Any], expected: Sequence[str], required: bool = True
              ) -> Dict[str, StageOutcome]:
    out: Dict[str, StageOutcome] = {}
    for stage in expected:
        raw = stages.get(stage)
        if raw is None and not required:
            continue
        if raw is None:  # run with --stages: a stage not run is unknown, not absent
            out[stage] = StageOutcome(stage, False, failure=StageFailure(
                kind="skipped", reason="not run on this rank (the agent's --stages)"))
            continue
        failure = StageFailure(**raw["failure"]) if raw.get("failure") else None
        out[stage] = StageOutcome(stage, bool(raw["ok"]), data=raw.get("data"), failure=failure,
                                  seconds=float(raw.get("seconds") or 0.0))
    return out


def driver_probe(raw: Optional[Mapping[str, Any]]) -> Probe[Driver]:
    """The driver from what the rank read: nvidia-smi, else /proc, plus libcuda's version."""
    if raw is None:
        return Probe.failed(Failure(kind=FailureKind.ERROR,
                                    reason="the rank did not report its driver"))
    code = raw.get("cuda_driver")
    cuda = f"{code // 1000}.{(code % 1000) // 10}" if isinstance(code, int) and code > 0 else None
    smi = raw.get("smi") or {}
    if smi.get("returncode") == 0:
        gpus, version = parse_smi_csv(smi.get("stdout") or "")
        return Probe.success(Driver(present=True, source="nvidia-smi", version=version,
                                    cuda_version=cuda, gpus=gpus))
    detail = smi.get("error") or (smi.get("stdout", "") + smi.get("stderr", "")).strip()[-500:]
    version = procfs_version(raw.get("procfs") or "")
    if version is not None:
        return Probe.success(Driver(present=True, source="procfs", version=version,
                                    cuda_version=cuda, detail=detail or None))
    return Probe.success(Driver(present=False, source="none", detail=detail or (
        "no /proc/driver/nvidia/version and no nvidia-smi on this rank's machine")))


def _collectives(raw: Optional[Mapping[str, Any]]) -> Optional[Collectives]:
    if raw is None:
        return None
    data = dict(raw)
    failure = dict(data.pop("failure") or {})
    never = failure.pop("never_arrived", None)
    return Collectives.model_validate({**data, "failure": failure or None,
                                       "never_arrived": never})


def _missing(raw: Mapping[str, Any]) -> MissingRank:
    identity = raw.get("identity")
    return MissingRank(rank=raw["rank"], state=raw["state"],
                       place=RankPlace.model_validate(identity) if identity else None,
                       silent_s=raw.get("silent_s"), waited_s=raw.get("waited_s"))
