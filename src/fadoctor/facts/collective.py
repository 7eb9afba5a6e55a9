"""Facts from the collective stage on one rank of a job: its own GPU and its all_reduce and
all_gather runs (`in_target/collective.py` writes them; fadoctor.distributed reads them)."""


from typing import List, Literal, Optional

from fadoctor.facts.frozen import Frozen


class RankDevice(Frozen):
    """The GPU a rank uses: the LOCAL_RANK-th device torch sees there (None: it has none)."""

    index: Optional[int] = None
    name: Optional[str] = None
    capability: Optional[str] = None
    uuid: Optional[str] = None
    pci: Optional[str] = None
    error: Optional[str] = None  # why it has no GPU of its own
    nccl_version: Optional[str] = None  # torch.cuda.nccl.version() there


class CollectiveOp(Frozen):
    """One collective on one rank: its result checked on that rank, and its mean time."""

    backend: Literal["gloo", "nccl"]
    scope: str  # "job", or a node (its label) when the job spans several
    op: Literal["all_reduce", "all_gather"]
    bytes: int  # S, the size of the whole array (the nccl-tests definition)
    ranks: int  # n, the ranks in the group
    correct: bool
    seconds: float
    iterations: int


class CollectiveSkip(Frozen):
    backend: str
    reason: str


class CollectiveTest(Frozen):
    """The stage's data: what ran and what was skipped (NCCL without a GPU on every rank)."""

    device: Optional[RankDevice] = None
    ops: List[CollectiveOp] = []
    skipped: List[CollectiveSkip] = []
