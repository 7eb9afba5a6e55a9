"""Observed evidence in plans: a pick seen working on a machine like the planned one ranks above
picks only inferred from the matrix, and one seen failing is never the best. Pure."""

import dataclasses
from pathlib import Path
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.compat.model import Record
from fadoctor.fix.solver import Pick, Plan
from fadoctor.install.machine import Machine

WORKS, FAILS, INFERRED = "observed working", "observed failing", "inferred from the matrix"


_PACKAGED = Path(__file__).resolve().parent.parent / "data" / "observed-compatibility.json"
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "data" / "observed-compatibility.json"


def shipped_path() -> Path:
    """What this project's own CI observed (`fadoctor compat merge`), shipped with fadoctor."""
    return _PACKAGED if _PACKAGED.is_file() else _SOURCE_TREE


def with_observations(plan: Plan, observed: List[Record]) -> Plan:
    """`plan` with each pick's evidence, re-ranked: observed working, then inferred, then
    observed failing (the order within each kept). Where no pick was observed at all the plan
    is as the matrix alone made it."""
    matches = [(p, _matching(p, plan.machine, observed)) for p in (plan.best, *plan.alternatives)]
    if not any(found for _, found in matches):
        return plan
    picks = [_annotated(p, found) for p, found in matches]
    rank = {WORKS: 0, INFERRED: 1, FAILS: 2}
    picks.sort(key=lambda p: rank[p.evidence])
    return dataclasses.replace(plan, best=picks[0], alternatives=tuple(picks[1:]))


def _annotated(pick: Pick, records: List[Record]) -> Pick:
    if not records:
        return dataclasses.replace(pick, evidence=INFERRED, notes=(
            *pick.notes, f"{INFERRED}: no run of this combination was observed"))
    failing = [r for r in records if r.verdict == "fails"]
    if failing:
        r = failing[0]
        note = f"{FAILS} on {r.runner or 'a machine like this'}: {r.reason or 'see its report'}"
        return dataclasses.replace(pick, evidence=FAILS, notes=(*pick.notes, note))
    where = sorted({f"{r.runner or 'a machine like this'}{f' ({r.ran_at})' if r.ran_at else ''}"
                    for r in records})
    note = f"{WORKS}: {len(records)} run(s), on {'; '.join(where)}"
    return dataclasses.replace(pick, evidence=WORKS, notes=(*pick.notes, note))


def _matching(pick: Pick, machine: Machine, records: List[Record]) -> List[Record]:
    return [r for r in records if _same_torch(pick, r) and _same_family(pick, r)
            and _same_machine(machine, r)]


def _same_torch(pick: Pick, record: Record) -> bool:
    if pick.torch is None or record.combination.torch is None:
        return False
    version, variant = _torch_of(record.combination.torch, record.combination.torch_cuda)
    return version == pick.torch.version and variant == pick.torch.variant and (
        record.combination.cxx11_abi in (None, pick.torch.cxx11_abi))


def _same_family(pick: Pick, record: Record) -> bool:
    c = record.combination
    if pick.family is None:
        return c.family is None
    return c.family == pick.family.value and c.family_version == pick.version


def _same_machine(machine: Machine, record: Record) -> bool:
    """The record's Python and GPU architecture are the planned machine's, where both are known;
    a machine with a GPU is matched only by records that ran on that architecture."""
    c = record.combination
    if machine.python is not None and c.python is not None and \
            ".".join(c.python.split(".")[:2]) != f"{machine.python.major}.{machine.python.minor}":
        return False
    if machine.gpu_cc is not None:
        return f"sm_{machine.gpu_cc.major}{machine.gpu_cc.minor}" in c.gpu_archs
    return True


def _torch_of(text: str, cuda: Optional[str]) -> Tuple[Optional[Version], str]:
    """(base version, variant) of a torch version as reported: 2.8.0+cu128 -> (2.8.0, cu128);
    without a local tag, the variant from its CUDA (13.0 -> cu130), else cpu."""
    base, _, local = text.partition("+")
    try:
        version: Optional[Version] = Version(base)
    except InvalidVersion:
        version = None
    if local:
        return version, local
    return version, ("cu" + cuda.replace(".", "") if cuda else "cpu")
