"""Bus bandwidth as NVIDIA's nccl-tests define it, from the times each rank measured (pure).

doc/PERFORMANCE.md of github.com/NVIDIA/nccl-tests: algbw = S / t, with S the size in bytes of
the whole array (for all_gather, the count per rank times n); busbw = algbw * 2(n-1)/n for
all_reduce and algbw * (n-1)/n for all_gather, so that it can be held against the hardware's
peak whatever the number of ranks n. GB/s there are 10^9 bytes per second.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from fadoctor.distributed.models import JobFacts
from fadoctor.distributed.report import Bandwidth
from fadoctor.facts.collective import CollectiveOp

GB = 1e9
OPS = ("all_reduce", "all_gather")


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' correction from algorithm to bus bandwidth for `op` on `n` ranks."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op == "all_gather":
        return (n - 1) / n
    raise ValueError(f"no bus bandwidth factor for {op}")


def algbw(size: int, seconds: float) -> float:
    """Algorithm bandwidth in GB/s: S / t."""
    return size / max(seconds, 1e-12) / GB


def busbw(op: str, size: int, n: int, seconds: float) -> float:
    return algbw(size, seconds) * bus_factor(op, n)


def _order(key: Tuple[str, str, str, int]) -> Tuple[str, bool, str, int, int]:
    """gloo before nccl, the job before its nodes, all_reduce before all_gather, small first."""
    backend, scope, op, size = key
    return backend, scope != "job", scope, OPS.index(op) if op in OPS else len(OPS), size


def table(job: JobFacts) -> List[Bandwidth]:
    """Each (backend, scope, op, size), timed on the slowest rank of its group."""
    runs: Dict[Tuple[str, str, str, int], List[Tuple[int, CollectiveOp]]] = {}
    for rank in job.ranks:
        for op in rank.collectives.ops if rank.collectives else []:
            runs.setdefault((op.backend, op.scope, op.op, op.bytes), []).append(
                (rank.place.rank, op))
    out = []
    for (backend, scope, name, size), ops in sorted(runs.items(), key=lambda kv: _order(kv[0])):
        slowest, op = max(ops, key=lambda pair: pair[1].seconds)
        out.append(Bandwidth(
            backend=backend, scope=scope, op=name, bytes=size, ranks=op.ranks,
            seconds=op.seconds, slowest_rank=slowest,
            algbw_gbps=algbw(size, op.seconds), busbw_gbps=busbw(name, size, op.ranks, op.seconds),
            correct=all(o.correct for _, o in ops)))
    return out
