"""The report model: checks, their findings and remedies; what every renderer turns into text."""


from enum import Enum
from typing import Any, Dict, List, Optional

from pydantic import BaseModel, ConfigDict, field_validator

from fadoctor.facts.model import Target

REPORT_SCHEMA_VERSION = 1


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


class Category(str, Enum):
    """The fixed vocabulary of root causes, shared by check, triage and JSON."""

    NO_GPU = "no_gpu"
    TORCH_CPU_ONLY = "torch_cpu_only"
    NOT_INSTALLED = "not_installed"
    TORCH_VERSION_MISMATCH = "torch_version_mismatch"
    CXX11_ABI_MISMATCH = "cxx11_abi_mismatch"
    CUDA_RUNTIME_MISMATCH = "cuda_runtime_mismatch"
    GPU_UNSUPPORTED = "gpu_unsupported"
    NO_KERNEL_IMAGE = "no_kernel_image"
    DRIVER_TOO_OLD = "driver_too_old"
    GLIBC_TOO_OLD = "glibc_too_old"
    DTYPE_UNSUPPORTED = "dtype_unsupported"
    HEAD_DIM_UNSUPPORTED = "head_dim_unsupported"
    OUT_OF_MEMORY = "out_of_memory"  # check --model: the training step's estimate exceeds the GPU
    BUILD_TOOLCHAIN = "build_toolchain"
    BUILD_RESOURCES = "build_resources"
    BUILD_ISOLATION = "build_isolation"
    WRONG_WHEEL = "wrong_wheel"
    PLATFORM_UNSUPPORTED = "platform_unsupported"
    ROCM = "rocm"
    COMPILE_GRAPH_BREAK = "compile_graph_break"
    NUMERICS = "numerics"  # a kernel runs but its output or gradients are wrong, NaN or Inf
    KERNEL_FAILURE = "kernel_failure"  # a launch or runtime error the GPU's arch does not explain
    GPU_BUSY = "gpu_busy"  # other work holds the GPU: kernel tests shrank or were skipped
    VERSION_CONFLICT = "version_conflict"
    RANK_MISSING = "rank_missing"  # a rank of a distributed job never reported
    RANKS_DIFFER = "ranks_differ"  # the ranks of a job run different software or hardware
    GPU_ASSIGNMENT = "gpu_assignment"  # a rank has no GPU of its own, or shares one
    COLLECTIVE_FAILED = "collective_failed"  # all_reduce/all_gather failed, hung or was wrong
    INTERNAL = "internal"
    INFO = "info"


class Remedy(Frozen):
    """What to do. `commands` are safe to copy and run; `code` is a snippet for the user's code."""

    summary: str
    commands: List[str] = []
    code: Optional[str] = None
    link: Optional[str] = None

    @field_validator("commands")
    @classmethod
    def _safe_to_paste(cls, commands: List[str]) -> List[str]:
        from fadoctor.safety.shell import Unsafe, is_safe, words_of

        # A line not built word by word by fadoctor.safety.shell is taken apart into literal words:
        # nothing in it can act as shell syntax. One that cannot be is a bug, never shown.
        try:
            return [line if is_safe(line) else words_of(line) for line in commands]
        except Unsafe as exc:
            raise ValueError(f"a remedy command is not safe to show: {exc}") from None


class Finding(Frozen):
    severity: Severity
    category: Category
    message: str
    subject: Optional[str] = None  # what it is about: a family, a GPU, a distribution
    evidence: Dict[str, Any] = {}
    remedies: List[Remedy] = []


class Status(str, Enum):
    PASSED = "passed"
    WARNING = "warning"
    FAILED = "failed"
    SKIPPED = "skipped"


class CheckResult(Frozen):
    id: str
    name: str
    title: str
    status: Status
    findings: List[Finding] = []
    skipped_reason: Optional[str] = None


class Environment(Frozen):
    """The one-line picture of what was examined, for the report's header."""

    python: Optional[str] = None
    platform: Optional[str] = None
    torch: Optional[str] = None
    driver: Optional[str] = None
    gpus: List[str] = []
    flash_attention: List[str] = []


class FamilyRef(Frozen):
    family: str  # fa2, fa3, fa4, vllm_fa
    distribution: Optional[str] = None
    version: Optional[str] = None


class Stack(Frozen):
    """The stack the report is about, as data for tools (`fadoctor compat`, dashboards): the
    `environment` lines above say the same for people. None: not known."""

    python: Optional[str] = None  # 3.12.11
    machine: Optional[str] = None  # x86_64
    libc: Optional[str] = None  # glibc 2.35
    torch: Optional[str] = None  # 2.8.0+cu128
    torch_cuda: Optional[str] = None
    torch_hip: Optional[str] = None
    cxx11_abi: Optional[bool] = None
    driver: Optional[str] = None
    gpu_archs: List[str] = []  # sm_90, one per GPU model
    families: List[FamilyRef] = []  # the installed flash-attention families


class Summary(Frozen):
    passed: int
    warning: int
    failed: int
    skipped: int
    worst: Optional[Severity] = None


class Report(Frozen):
    schema_version: int = REPORT_SCHEMA_VERSION
    fadoctor_version: str
    matrix_date: Optional[str] = None  # the data_date of the matrix the facts were held against
    target: Target
    environment: Environment
    stack: Optional[Stack] = None
    summary: Summary
    checks: List[CheckResult]

    def findings(self) -> List[Finding]:
        return [f for c in self.checks for f in c.findings]
