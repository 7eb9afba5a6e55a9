"""The words of the distributed report, kept together: rank sets, sizes, phases, missing ranks."""

from __future__ import annotations

from typing import Iterable, List, Optional

from fadoctor.distributed.models import MissingRank
from fadoctor.distributed.report import Difference, Variant


def rank_text(ranks: Iterable[int]) -> str:
    """'rank 3', 'ranks 0-6, 9': consecutive ranks as ranges, so 64 ranks print short."""
    ordered = sorted(set(ranks))
    if len(ordered) == 1:
        return f"rank {ordered[0]}"
    runs: List[List[int]] = []
    for r in ordered:
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    spans = [str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs]
    return "ranks " + ", ".join(spans)


def has(count: int) -> str:
    return "has" if count == 1 else "have"


def size_text(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def phase_text(phase: str) -> str:
    """A collective test phase ('nccl/job/all_reduce/1048576') in words."""
    parts = phase.split("/")
    if len(parts) == 4:
        backend, scope, op, size = parts
        where = "across the job" if scope == "job" else f"within {scope}"
        return f"{op} of {size_text(int(size))} over {backend} {where}"
    return {"start": "starting", "import": "importing torch", "connect": "connecting to the store",
            "gloo/join": "joining the gloo group", "gloo/init": "creating the gloo groups",
            "nccl/init": "creating the NCCL groups"}.get(phase, phase)


_MISSING = {
    "never_arrived": "never reached the job's store (rank 0 waited {waited}): the process did not "
                     "start, or could not reach MASTER_ADDR",
    "lost": "started{hosts} but fell silent {silent} before rank 0 gave up: killed, crashed, or "
            "its machine went away",
    "deadline": "were still working{hosts} when the gather's deadline passed ({waited})",
    "interrupted": "had not reported{hosts} when rank 0 was stopped — a launcher stops every rank "
                   "when one exits: look for the rank that failed",
    "no_store": "could not be gathered: the job's store was unreachable",
    "no_record": "left no record in the facts folder",
}


def missing_text(state: str, missing: List[MissingRank], interrupted: Optional[str]) -> str:
    hosts = sorted({m.place.host for m in missing if m.place is not None})
    waited = max((m.waited_s or 0.0 for m in missing), default=0.0)
    silent = min((m.silent_s for m in missing if m.silent_s is not None), default=None)
    text = _MISSING[state].format(
        hosts=f" on {', '.join(hosts)}" if hosts else "", waited=f"{waited:.0f} s",
        silent=f"{silent:.0f} s" if silent is not None else "")
    if state == "interrupted" and interrupted:
        text += f" (rank 0 got {interrupted})"
    recovered = [m.rank for m in missing if m.record_in_folder]
    if recovered:
        text += f"; the own record of {rank_text(recovered)} was found in the facts folder"
    return f"{rank_text(m.rank for m in missing)} {text}"


def variant_text(variant: Variant) -> str:
    nodes = variant.nodes
    where = f" ({', '.join(nodes)})" if len(nodes) <= 3 else f" ({len(nodes)} nodes)"
    return f"{variant.value} on {rank_text(variant.ranks)}{where}"


def difference_text(diff: Difference) -> str:
    return f"{diff.key} differs: " + "; ".join(variant_text(v) for v in diff.variants)


DIFFERENCE_REMEDY = {
    "software": "Give every node the same environment (one container image, or one lock file "
                "installed everywhere): ranks that run other builds fail at import, crash in a "
                "kernel, or hang in the first collective.",
    "hardware": "Mixed GPUs and drivers can run one job, but flash-attention support and speed "
                "follow the weakest: check each group with `fadoctor check` on its node.",
    "environment": "Set these variables alike on every node (in the launch script, not in a "
                   "node's shell profile).",
}
