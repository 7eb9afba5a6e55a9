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
from fadoctor.errors import InputError
from fadoctor.facts.model import Driver, Facts, Failure, FailureKind, Probe
from fadoctor.in_target.rank import GATHER_FORMAT, RECORD_FORMAT
from fadoctor.in_target.registry import names
from fadoctor.probes.driver import parse_smi_csv, procfs_version
from fadoctor.probes.runner import StageFailure, StageOutcome


def job_from_gather(raw: Mapping[str, Any], where: str) -> JobFacts:
    """The facts of the job from rank 0's `gathered.json`."""
    if raw.get("format") != GATHER_FORMAT:
        raise InputError(f"{where} is not a gathered facts file (format {raw.get('format')!r}, "
                         f"expected {GATHER_FORMAT})")
    ranks = [rank_facts(r, where) for r in raw.get("ranks") or []]
    try:
        missing = [_missing(m) for m in raw.get("missing") or []]
        return JobFacts(fadoctor_version=__version__, world_size=raw["world_size"],
                        run_id=raw.get("run_id"), ranks=ranks, missing=missing,
                        interrupted=raw.get("interrupted"), seconds=raw.get("seconds"),
                        gather_seconds=raw.get("gather_seconds"))
    except (ValidationError, KeyError, TypeError) as exc:
        raise InputError(f"{where} is malformed: {_first_error(exc)}") from exc


def job_from_records(records: List[Mapping[str, Any]], where: str) -> JobFacts:
    """The facts of the job from the ranks' own `rank-NNNNN.json` files (no gathered.json)."""
    ranks = sorted((rank_facts(r, where) for r in records), key=lambda r: r.place.rank)
    world = max((r.place.world_size for r in ranks), default=0)
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
    except (ValidationError, KeyError, TypeError) as exc:
        rank = (raw.get("identity") or {}).get("rank", "?")
        raise InputError(f"{where}: the record of rank {rank} is malformed: "
                         f"{_first_error(exc)}") from exc


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
