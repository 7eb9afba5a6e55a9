"""Jobs for the distributed tests, built from a real gather: records of a real rank agent run
(tests/fixtures/distributed/) copied to as many ranks as a case needs, each edited as the case
says, optionally with the facts recorded on a real H200 (tests/fixtures/recorded/)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from fadoctor.distributed.assemble import job_from_gather
from fadoctor.distributed.models import JobFacts
from fadoctor.facts.collective import RankDevice
from fadoctor.facts.model import Facts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GATHERED = FIXTURES / "distributed" / "cpu-2nodes-gloo-gathered.json"
H200 = FIXTURES / "recorded" / "h200-torch211-cu130-flash-attn-4.json"
# From the nvidia-smi line recorded on that H200 (tests/probes/test_driver.py).
H200_UUID = "GPU-d1cc60ae-a6fd-9b59-c1eb-81db10794e3d"

Record = Dict[str, Any]


def raw_gather() -> Dict[str, Any]:
    data: Dict[str, Any] = json.loads(GATHERED.read_text(encoding="utf-8"))
    return data


def raw_job(world: int, per_node: int, edit: Optional[Callable[[int, Record], None]] = None
            ) -> Dict[str, Any]:
    """A gathered.json of `world` ranks, `per_node` a node, each a copy of the recorded rank 0."""
    raw = raw_gather()
    ranks = []
    for r in range(world):
        record = copy.deepcopy(raw["ranks"][0])
        record["identity"].update(rank=r, world_size=world, local_rank=r % per_node,
                                  node_rank=r // per_node, local_world_size=per_node,
                                  host=f"node-{r // per_node}")
        for op in record["collective"]["ops"]:
            op["ranks"] = world
        if edit is not None:
            edit(r, record)
        ranks.append(record)
    return {**raw, "world_size": world, "ranks": ranks, "missing": []}


def job(world: int, per_node: int, edit: Optional[Callable[[int, Record], None]] = None
        ) -> JobFacts:
    return job_from_gather(raw_job(world, per_node, edit), "test")


def h200_facts() -> Facts:
    return Facts.model_validate_json(H200.read_text(encoding="utf-8"))


def on_h200(job: JobFacts, edit: Optional[Callable[[int, Facts], Facts]] = None) -> JobFacts:
    """Every rank with the H200's recorded facts and its own GPU (the H200, by local rank)."""
    base = h200_facts()
    ranks = []
    for rank in job.ranks:
        facts = edit(rank.place.rank, base) if edit is not None else base
        device = RankDevice(index=0, name="NVIDIA H200", capability="9.0",
                            uuid=f"{H200_UUID}-{rank.place.local_rank}",
                            nccl_version="2.28.9")  # its nvidia-nccl-cu13 wheel
        assert rank.collectives is not None
        collectives = rank.collectives.model_copy(update={"device": device})
        ranks.append(rank.model_copy(update={"facts": facts, "collectives": collectives}))
    return job.model_copy(update={"ranks": ranks})
