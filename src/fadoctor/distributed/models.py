"""The facts of a whole job: each rank's place, facts, GPU, collective results and extension hashes,
and the ranks that never reported. Frozen and serializable, like `fadoctor.facts.model.Facts`."""

from __future__ import annotations

from typing import Dict, List, Literal, Optional

from fadoctor.facts.collective import CollectiveTest
from fadoctor.facts.frozen import Frozen
from fadoctor.facts.model import Facts, Failure

JOB_SCHEMA_VERSION = 1


class RankPlace(Frozen):
    """Where a rank sits in the job, as its launcher said (torchrun, srun or plain variables)."""

    rank: int
    world_size: int
    local_rank: Optional[int] = None
    node_rank: Optional[int] = None  # torchrun's GROUP_RANK, srun's SLURM_NODEID
    local_world_size: Optional[int] = None
    host: str
    pid: Optional[int] = None
    launcher: Literal["torchrun", "slurm", "env"]
    master_addr: Optional[str] = None
    master_port: Optional[int] = None
    agent_store: Optional[bool] = None

    @property
    def node(self) -> str:
        """The node, as the launcher numbers it, else by host name."""
        return f"node {self.node_rank}" if self.node_rank is not None else self.host


class Collectives(CollectiveTest):
    """A rank's collective stage: its data, and how it ended — where the rank was, and who never
    arrived there, when it failed."""

    phase: str  # the last phase the rank entered ("nccl/job/all_reduce/1048576")
    seconds: float
    failure: Optional[Failure] = None  # None: it finished
    never_arrived: Optional[List[int]] = None  # ranks that never entered the failed phase


class ExtensionHash(Frozen):
    path: str
    sha256: Optional[str] = None
    size: Optional[int] = None
    error: Optional[str] = None


class RankFacts(Frozen):
    place: RankPlace
    facts: Facts
    collectives: Optional[Collectives] = None  # None: not run (--no-collectives)
    extension_hashes: List[ExtensionHash] = []
    environment: Dict[str, str] = {}  # the variables that steer torch.distributed and NCCL
    store_error: Optional[str] = None  # why this rank could not reach the job's store
    seconds: Optional[float] = None


class MissingRank(Frozen):
    """A rank whose record never reached rank 0, and what rank 0 saw of it."""

    rank: int
    # never_arrived: never announced itself; lost: announced, then fell silent (killed);
    # deadline: still working at the gather's deadline; interrupted: rank 0 was stopped first;
    # no_store: the store could not be reached; no_record: no record file (read from a folder).
    state: Literal["never_arrived", "lost", "deadline", "interrupted", "no_store", "no_record"]
    place: Optional[RankPlace] = None  # what it announced, if it did
    silent_s: Optional[float] = None
    waited_s: Optional[float] = None
    record_in_folder: bool = False  # its own record was found beside rank 0's (a shared folder)


class JobFacts(Frozen):
    """Every rank's facts, as rank 0 gathered them (`fadoctor snapshot --distributed`)."""

    schema_version: int = JOB_SCHEMA_VERSION
    kind: Literal["distributed"] = "distributed"
    fadoctor_version: str
    world_size: int
    run_id: Optional[str] = None
    ranks: List[RankFacts]
    missing: List[MissingRank] = []
    interrupted: Optional[str] = None  # why rank 0 stopped gathering early (SIGTERM)
    seconds: Optional[float] = None  # rank 0's whole run
    gather_seconds: Optional[float] = None  # rank 0's wait for the others, after its own record
