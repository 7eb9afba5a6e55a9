"""Facts from running attention kernels: smoke-test cases, the torch.compile probe, the GPU's load.

One model per stage's data (`in_target/attention/smoke.py`, `compile_probe.py`, `bench.py` write them); the
facts model holds one per target, each a probe that may have crashed or hung instead.
"""


from typing import List, Literal, Optional

from fadoctor.facts.frozen import Frozen

CaseStatus = Literal["passed", "wrong", "nonfinite", "error", "not_applicable", "skipped"]


class GpuProcess(Frozen):
    pid: int
    ours: bool  # a worker of this fadoctor run
    used_mib: Optional[int] = None


class GpuState(Frozen):
    """The GPU before the cases ran."""

    index: int
    source: Literal["nvml", "torch"]
    free_mib: int
    total_mib: int
    processes: Optional[List[GpuProcess]] = None  # None: unknown (no NVML in the target)
    utilization: Optional[int] = None  # percent
    busy: Optional[str] = None  # why it counts as shared with other work


class CaseSpec(Frozen):
    api: Literal["sdpa", "func", "varlen", "kvcache"]
    dtype: str
    causal: bool
    gqa: bool
    head_dim: int
    batch: int
    seqlen_q: int
    seqlen_k: int
    heads: int
    kv_heads: int
    backward: bool


class TensorCheck(Frozen):
    """One tensor against the fp32 reference: error <= multiple * pytorch_error + epsilon."""

    tensor: Literal["out", "dq", "dk", "dv"]
    finite: bool
    multiple: float
    ok: bool
    error: Optional[float] = None
    pytorch_error: Optional[float] = None
    tolerance: Optional[float] = None


class CaseResult(Frozen):
    case: CaseSpec
    label: str  # "flash_attn_func, bfloat16, head dim 128, causal, GQA 16/4 heads, forward+backward"
    status: CaseStatus
    reason: Optional[str] = None  # not_applicable / skipped: why
    phase: Optional[Literal["setup", "forward", "backward", "judge"]] = None  # error: where
    exception_type: Optional[str] = None
    message: Optional[str] = None
    traceback_tail: Optional[str] = None
    seconds: Optional[float] = None
    errors: List[TensorCheck] = []
    backward: Optional[str] = None  # why backward was not run (an inference-only API)
    oom: bool = False
    # not_applicable: who refused: the target's own eligibility check (or its API), or the SDPA
    # dispatcher at the call ("No available kernel") after the check had said yes.
    refused_by: Optional[Literal["check", "dispatcher"]] = None
    # SDPA: the GQA case run with the key/value heads expanded (repeat_interleave), because the
    # backend refuses enable_gqa; `reason` then holds that refusal.
    kv_expanded: bool = False


class FirstCall(Frozen):
    """The first passing case, run again: the first call paid lazy loading or JIT compilation."""

    label: str
    first_s: Optional[float] = None
    repeat_s: float


class SmokeTarget(Frozen):
    """One target's smoke test: SDPA with one backend forced, or a family."""

    target: str
    torch: Optional[str] = None
    device: Optional[str] = None
    grid: Optional[Literal["default", "full"]] = None
    installed: Optional[bool] = None  # False: the family is not installed
    import_error: Optional[str] = None
    skipped: Optional[str] = None  # why no case ran
    gpu: Optional[GpuState] = None
    shrunk: int = 1  # sequence lengths were divided by this to fit in free memory (0: none fit)
    cases: List[CaseResult] = []
    first_call: Optional[FirstCall] = None
    context_lost: bool = False


class CompileError(Frozen):
    exception_type: str
    message: str
    traceback_tail: Optional[str] = None


class Explain(Frozen):
    """torch._dynamo.explain of the attention module."""

    ok: bool
    graph_count: Optional[int] = None
    graph_break_count: Optional[int] = None
    break_reasons: List[str] = []
    error: Optional[CompileError] = None


class FullGraph(Frozen):
    """torch.compile(fullgraph=True): compiled and ran forward+backward, or the error."""

    ok: bool
    backend: str
    seconds: Optional[float] = None
    correct: Optional[bool] = None
    check: Optional[TensorCheck] = None
    error: Optional[CompileError] = None


class CompileTarget(Frozen):
    target: str
    torch: Optional[str] = None
    device: Optional[str] = None
    installed: Optional[bool] = None
    import_error: Optional[str] = None
    skipped: Optional[str] = None
    custom_ops: Optional[List[str]] = None  # registered ops in a flash-attention namespace
    explain: Optional[Explain] = None
    fullgraph: Optional[FullGraph] = None


class Timing(Frozen):
    """One mode's timings: CUDA events around each call, L2 flushed before it."""

    median_ms: float
    min_ms: float
    max_ms: float
    reps: int
    tflops: float


class Timings(Frozen):
    fwd: Timing
    fwd_bwd: Timing


class BenchTarget(Frozen):
    """One target timed at the user's shape, after its smoke test at that configuration."""

    target: str
    torch: Optional[str] = None
    device: Optional[str] = None
    device_name: Optional[str] = None
    installed: Optional[bool] = None
    import_error: Optional[str] = None
    skipped: Optional[str] = None
    case: Optional[CaseSpec] = None
    check: Optional[CaseResult] = None
    first_call_s: Optional[float] = None  # the process's first call (flash-attn-4 JIT-compiles)
    timing: Optional[Timings] = None


class HfAttention(Frozen):
    """The attention implementations the installed transformers registers."""

    installed: bool
    version: Optional[str] = None
    error: Optional[str] = None
    attn_implementations: Optional[List[str]] = None
