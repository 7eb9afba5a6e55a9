"""The compatibility file: one record per combination that ran, with what each check said."""

from typing import Dict, List, Literal, Optional

from fadoctor.facts.frozen import Frozen
from fadoctor.facts.kernels import Timing

COMPAT_SCHEMA_VERSION = 1

Verdict = Literal["works", "fails"]


class Combination(Frozen):
    """What was installed together, and on what. None: not known (a CPU runner has no GPU)."""

    python: Optional[str] = None  # 3.11.7
    torch: Optional[str] = None  # 2.13.0+cpu
    torch_cuda: Optional[str] = None  # None: a CPU (or ROCm) build
    cxx11_abi: Optional[bool] = None
    machine: Optional[str] = None  # x86_64
    gpu_archs: List[str] = []  # sm_90; [] on a runner without a GPU
    family: Optional[str] = None  # fa2, fa3, fa4, vllm_fa; None: no flash-attention installed
    family_distribution: Optional[str] = None
    family_version: Optional[str] = None
    extras: List[str] = []  # what else the job installed with it (torchvision==0.29.1)


class Kernel(Frozen):
    """One smoke-test target's result (FAD140's evidence)."""

    target: str
    status: str  # passed, failed, skipped, ... as FAD140 says


class Bench(Frozen):
    """One target's `fadoctor bench` row, at the record's bench shape."""

    target: str
    status: str  # timed, failed, untested
    fwd: Optional[Timing] = None
    fwd_bwd: Optional[Timing] = None


class Record(Frozen):
    combination: Combination
    # fails: an error-level finding, as `check --fail-on error` fails; on a runner without a GPU
    # the checks that need one are not judged (records.NEEDS_A_GPU)
    verdict: Verdict
    reason: Optional[str] = None  # the first error, for a failing combination
    checks: Dict[str, str]  # check ID -> passed, warning, failed, skipped
    kernels: List[Kernel] = []
    bench: List[Bench] = []  # `fadoctor bench` on the same environment, where it was run
    bench_shape: Optional[str] = None  # bfloat16, causal, batch 2, seqlen 4096, ...
    fadoctor_version: str
    data_date: Optional[str] = None  # the matrix's date, where the report carries it
    ran_at: Optional[str] = None  # ISO 8601, UTC
    runner: Optional[str] = None  # the CI runner's label, or the machine the report describes


class CompatFile(Frozen):
    schema_version: int = COMPAT_SCHEMA_VERSION
    kind: Literal["fadoctor-compatibility"] = "fadoctor-compatibility"
    records: List[Record]
