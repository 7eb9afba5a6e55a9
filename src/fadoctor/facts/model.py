"""The facts model: everything `collect` learns about an environment, frozen and serializable.

A facts file written on one machine (`fadoctor snapshot`) is diagnosed on another
(`fadoctor check --facts`); the same files are the test fixtures. Each probe's result is either
"ok, with data" or "failed, with a kind and a reason" — an unknown is a value, never a guess.
Inside a probe's data, a field that a source might not know is Optional and `None` means unknown:
`Torch.cuda_available=None` is "not reported", `False` is "torch said no". Version-1 files, whose
fields had claims for defaults, are read through `fadoctor.facts.v1`.
"""


from enum import Enum
from typing import Any, Dict, Generic, List, Literal, Optional, TypeVar

from pydantic import field_validator, model_validator

from fadoctor.facts.binaries import BinaryAnalysis, ExtensionFile, TorchLoad

# The collective stage's model (the rank agent's, fadoctor.distributed reads it).
from fadoctor.facts.collective import CollectiveTest  # noqa: F401
from fadoctor.facts.family import Family as Family  # the name every layer imports from here
from fadoctor.facts.frozen import Frozen

# The attention-kernel stages' models: the registry names each stage's model in this module.
from fadoctor.facts.kernels import BenchTarget, CompileTarget, HfAttention, SmokeTarget  # noqa: F401

# The transformers stage's model (what each attn_implementation runs).
from fadoctor.facts.transformers import TransformersAttention
from fadoctor.safety.secrets import redact_environment, without_credentials

SCHEMA_VERSION = 2

# Where facts came from: the worker in the target (`probe`), reading files only (`static`, check
# --static), a report pasted by a user (`pasted`), or output recorded elsewhere and replayed
# (`recorded`).
Origin = Literal["probe", "static", "pasted", "recorded"]


class FailureKind(str, Enum):
    """Why a probe produced no data."""

    IMPORT_ERROR = "import_error"  # the import raised (ImportError, OSError, RuntimeError, ...)
    CRASH = "crash"  # the child died from a signal (segfault, abort)
    EXIT = "exit"  # the child exited with a non-zero status without reporting
    TIMEOUT = "timeout"  # the stage outlived its timeout and the child was killed
    NOT_FOUND = "not_found"  # the thing to probe is absent (interpreter, nvidia-smi)
    ERROR = "error"  # the probe itself raised
    SKIPPED = "skipped"  # not run, because a probe it needs failed
    NOT_REPORTED = "not_reported"  # the source (a pasted report, a recording) does not say


class Failure(Frozen):
    kind: FailureKind
    reason: str
    exception_type: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[str] = None
    stderr_tail: Optional[str] = None
    traceback_tail: Optional[str] = None
    importing: Optional[str] = None  # the module being imported when the child died or hung


T = TypeVar("T")


class Probe(Frozen, Generic[T]):
    """A probe result: `ok` with `data`, or not ok with `failure`."""

    ok: bool
    data: Optional[T] = None
    failure: Optional[Failure] = None

    @model_validator(mode="after")
    def _one_of(self) -> "Probe[T]":
        if self.ok != (self.data is not None) or self.ok == (self.failure is not None):
            raise ValueError("a probe is either ok with data or failed with a failure")
        return self

    @classmethod
    def success(cls, data: T) -> "Probe[T]":
        return cls(ok=True, data=data)

    @classmethod
    def failed(cls, failure: Failure) -> "Probe[T]":
        return cls(ok=False, failure=failure)


def probe_of(model: Any, outcome: Any) -> Probe[Any]:
    """A worker stage's outcome (a probes.runner.StageOutcome) as a probe of `model`: the stage's
    failure, or its data validated; a record that does not validate is a failure that says so."""
    from pydantic import ValidationError

    if not outcome.ok:
        return Probe.failed(Failure.model_validate(vars(outcome.failure)))
    try:
        return Probe.success(model.model_validate(outcome.data))
    except ValidationError as exc:
        return Probe.failed(Failure(kind=FailureKind.ERROR, reason=f"the worker's "
                                    f"{outcome.stage} record is malformed: {exc}"))


class Target(Frozen):
    """Which interpreter was examined, and why that one."""

    python: str
    chosen_by: Literal["--python", "VIRTUAL_ENV", "CONDA_PREFIX", "current", "facts-file"]


class Host(Frozen):
    """The interpreter and the machine under it. Every field may be unknown (None)."""

    os: Optional[str] = None  # platform.system(): Linux, Darwin, Windows
    os_release: Optional[str] = None  # PRETTY_NAME from os-release
    machine: Optional[str] = None  # x86_64, aarch64
    libc: Optional[str] = None  # "glibc" / "musl"
    libc_version: Optional[str] = None  # "2.35"
    python_version: Optional[str] = None  # "3.11.7"
    python_implementation: Optional[str] = None  # CPython
    python_executable: Optional[str] = None
    python_abi_tag: Optional[str] = None  # "cp311", "cp313t"
    prefix: Optional[str] = None
    cpus: Optional[int] = None
    memory_mib: Optional[int] = None  # physical memory: what bounds a flash-attn build's jobs
    # The variables that steer CUDA, torch and flash-attn ({}: none is set; None: unknown).
    environment: Optional[Dict[str, str]] = None

    @field_validator("environment")
    @classmethod
    def _no_secrets(cls, value: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
        return None if value is None else redact_environment(value)


class Distribution(Frozen):
    name: str  # canonical (PEP 503) name
    version: str
    location: Optional[str] = None
    installer: Optional[str] = None
    direct_url: Optional[str] = None  # where pip got it, from direct_url.json (e.g. a wheel URL)
    top_level: Optional[List[str]] = None  # from top_level.txt ([]: it has none)
    # Requires-Dist as written, markers included ([]: it declares none; None: unknown).
    requires: Optional[List[str]] = None
    # A flash-attention family's files (from RECORD) that another family distribution in the same
    # folder also lists ([]: none; None: not read, or not a family distribution), at most 20.
    shared_files: Optional[List[str]] = None
    # A flash-attention family's compiled extension files, as its RECORD lists them ([]: none,
    # an install without its extension; None: not read, or no RECORD).
    extensions: Optional[List[str]] = None
    # Why its METADATA could not be read as it should (not UTF-8, unreadable): name and version
    # are then what could be read of it.
    error: Optional[str] = None

    @field_validator("direct_url")
    @classmethod
    def _no_credentials(cls, value: Optional[str]) -> Optional[str]:
        return without_credentials(value)


class Packages(Frozen):
    distributions: List[Distribution]

    def get(self, name: str) -> Optional[Distribution]:
        for dist in self.distributions:
            if dist.name == name:
                return dist
        return None


class Gpu(Frozen):
    index: int
    name: str
    compute_capability: Optional[str] = None  # "9.0"
    memory_mib: Optional[int] = None
    uuid: Optional[str] = None


class Driver(Frozen):
    """The NVIDIA driver as the machine reports it; `present=False` is a fact, not an error."""

    present: bool
    source: Literal["nvml", "procfs", "nvidia-smi", "none"]
    version: Optional[str] = None  # "580.82.07"
    cuda_version: Optional[str] = None  # highest CUDA the driver supports, "13.0"
    gpus: Optional[List[Gpu]] = None  # None: the source does not list them (procfs)
    detail: Optional[str] = None  # why no driver was found


class SdpaBackend(Frozen):
    name: Literal["flash", "efficient", "cudnn", "math"]
    compiled: Optional[bool] = None  # built into this torch (None: torch cannot tell)
    enabled: Optional[bool] = None  # the global torch.backends.cuda switch
    usable: Optional[bool] = None  # can_use_* for a representative bf16 training shape
    reasons: List[str] = []  # why not usable, as torch warns it


class TorchDevice(Frozen):
    index: int
    name: str
    capability: str  # "9.0"


class Torch(Frozen):
    version: str
    file: Optional[str] = None
    cuda: Optional[str] = None  # torch.version.cuda
    hip: Optional[str] = None  # torch.version.hip
    cudnn: Optional[int] = None
    cxx11_abi: Optional[bool] = None
    # None below: not reported. cuda/hip stay None for a build without them, as torch says.
    arch_list: Optional[List[str]] = None  # torch.cuda.get_arch_list()
    cuda_available: Optional[bool] = None
    cuda_error: Optional[str] = None  # why cuda is unavailable, if torch said
    device_count: Optional[int] = None
    devices: Optional[List[TorchDevice]] = None
    sdpa: Optional[List[SdpaBackend]] = None
    sdpa_error: Optional[str] = None  # why `sdpa` is unknown, when the probe failed
    warnings: List[str] = []  # warnings torch emitted while we probed


class ExtensionImport(Frozen):
    """A compiled extension module of a family, imported on its own."""

    module: str
    ok: bool
    file: Optional[str] = None
    error: Optional[str] = None
    exception_type: Optional[str] = None


class FamilyImport(Frozen):
    module: str
    file: Optional[str] = None
    version: Optional[str] = None  # the module's __version__, if any
    extension: Optional[str] = None  # path of the compiled extension that was loaded
    extensions: List[ExtensionImport] = []  # every compiled extension present, and its import


class FlashAttention(Frozen):
    """One installed (or absent) flash-attention family."""

    family: Family
    distribution: Optional[str] = None  # the distribution that provides it
    version: Optional[str] = None  # the distribution's version
    installed: Optional[bool] = None  # None: the source does not say
    # None when not installed (nothing to import); else the import probe's result.
    imported: Optional[Probe[FamilyImport]] = None


class TorchFiles(Frozen):
    """torch as its files say, without importing it."""

    dir: str
    lib_dir: Optional[str] = None
    version: Optional[str] = None  # from torch/version.py, read as text
    cuda: Optional[str] = None
    hip: Optional[str] = None
    git_version: Optional[str] = None
    cxx11_abi: Optional[bool] = None  # from the std::string in libc10's exported symbols


class Files(Frozen):
    """Where the binaries lie: torch, each family's compiled extensions, the nvidia-* wheels."""

    torch: Optional[TorchFiles] = None
    extensions: List[ExtensionFile] = []
    wheel_libraries: List[str] = []
    sys_path: Optional[List[str]] = None  # the target's, where torch looks for CUDA libraries
    linked: Optional[List[ExtensionFile]] = None  # every other shared object that links torch


class KernelRun(Frozen, Generic[T]):
    """Attention-kernel stages of one kind (smoke tests, compile probes): one probe per target."""

    grid: Optional[Literal["default", "full"]] = None  # smoke tests: which set ran
    skipped: Optional[str] = None  # why none ran
    targets: Dict[str, Probe[T]] = {}  # sdpa_flash, fa2, ...


class Facts(Frozen):
    schema_version: int = SCHEMA_VERSION
    fadoctor_version: str
    origin: Origin = "probe"
    mode: Literal["full", "static"] = "full"  # static: nothing was imported (check --static)
    target: Target
    host: Probe[Host]
    packages: Probe[Packages]
    driver: Probe[Driver]
    torch: Probe[Torch]
    flash_attention: List[FlashAttention]
    files: Optional[Probe[Files]] = None
    binaries: Optional[Probe[List[BinaryAnalysis]]] = None
    torch_load: Optional[TorchLoad] = None
    smoke: Optional[KernelRun[SmokeTarget]] = None  # None: not run (check --kernels none)
    compile: Optional[KernelRun[CompileTarget]] = None  # None: not run (no check --compile)
    # None: not asked (check --static, or facts from before fadoctor asked transformers)
    transformers: Optional[Probe[TransformersAttention]] = None
    timings: Dict[str, float] = {}

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        from fadoctor.facts.v1 import upgrade

        return upgrade(data)

    @model_validator(mode="after")
    def _known_schema(self) -> "Facts":
        if self.schema_version != SCHEMA_VERSION:
            raise ValueError(
                f"facts schema_version {self.schema_version} is not one this fadoctor reads "
                f"(1, read as {SCHEMA_VERSION}, or {SCHEMA_VERSION})"
            )
        return self

    def family(self, family: Family) -> Optional[FlashAttention]:
        for fa in self.flash_attention:
            if fa.family == family:
                return fa
        return None
