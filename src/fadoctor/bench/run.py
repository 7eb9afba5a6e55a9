"""`fadoctor bench`: time every working attention backend at the user's shape, and rank them.

`collect_bench` runs one worker in the target interpreter, one stage per target, one at a time
(two timed at once would disturb each other), each crash-isolated; `bench_report` is pure: it
ranks the targets that passed their smoke test by forward+backward TFLOP/s, takes the fraction of
the GPU's dense peak where the matrix has a sourced one, and names the fastest correct target
with its transformers attn_implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, Tuple

from pydantic import BaseModel, ConfigDict

from fadoctor import __version__
from fadoctor.checks.kernel_remedies import SDPA_NAMES
from fadoctor.checks.kernels import FAILED
from fadoctor.facts.kernels import BenchTarget, HfAttention, Timing
from fadoctor.facts.model import Failure, FailureKind, Family, Probe, probe_of
from fadoctor.in_target import attention
from fadoctor.matrix import Matrix
from fadoctor.probes.runner import Progress, StageOutcome
from fadoctor.snippets import sdpa_backends_code, snippet

# The transformers attn_implementation of each target. "sdpa" is cited with the snippet
# transformers_sdpa; the others are offered only when the installed transformers registers them.
HF_NAMES = {"fa2": "flash_attention_2", "fa3": "flash_attention_3", "fa4": "flash_attention_4",
            "sdpa_flash": "sdpa", "sdpa_efficient": "sdpa", "sdpa_cudnn": "sdpa",
            "sdpa_math": "sdpa"}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Shape(_Frozen):
    batch: int = 2
    seqlen: int = 4096
    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    causal: bool = True
    dtype: Literal["bfloat16", "float16"] = "bfloat16"

    def text(self) -> str:
        heads = f"{self.heads} heads" + (f" ({self.kv_heads} kv)" if self.kv_heads != self.heads
                                         else "")
        return (f"{self.dtype}, {'causal' if self.causal else 'not causal'}, batch {self.batch}, "
                f"seqlen {self.seqlen}, {heads}, head dim {self.head_dim}")


@dataclass(frozen=True)
class BenchOptions:
    shape: Shape = field(default_factory=Shape)
    reps: int = 30
    warmup: int = 5
    targets: Tuple[str, ...] = attention.TARGETS
    device: Optional[str] = None  # "cpu" times the harness on CPU (tests)
    timeout: Optional[float] = None


class BenchFacts(_Frozen):
    python: str
    shape: Shape
    targets: Dict[str, Probe[BenchTarget]]
    transformers: Optional[Probe[HfAttention]] = None


def stage_options(options: BenchOptions) -> Dict[str, Any]:
    s = options.shape
    return {"shape": {"batch": s.batch, "seqlen": s.seqlen, "heads": s.heads,
                      "kv_heads": s.kv_heads}, "head_dim": s.head_dim, "causal": s.causal,
            "dtype": s.dtype, "reps": options.reps, "warmup": options.warmup}


def bench_stages(options: BenchOptions) -> List[str]:
    return ([attention.stage_name("bench", t) for t in options.targets]
            + [attention.stage_name("bench", "hf")])


def collect_bench(python: str, environ: Mapping[str, str], options: BenchOptions,
                  progress: Optional[Progress] = None) -> BenchFacts:
    from fadoctor.collect.assemble import safe_driver
    from fadoctor.probes.kernels import KernelOptions, KernelWorkers

    stages = bench_stages(options)
    limits = {s: options.timeout for s in stages} if options.timeout else None
    driver = safe_driver().data if options.device is None else None  # keys the JIT cache
    workers = KernelWorkers(python, environ, KernelOptions(device=options.device),
                            progress=progress, stages=stages, stage_extra=stage_options(options),
                            timeouts=limits, driver=driver)
    outcomes = workers.wait()
    targets = {t: _probe(BenchTarget, outcomes.get(attention.stage_name("bench", t)))
               for t in options.targets}
    return BenchFacts(python=python, shape=options.shape, targets=targets,
                      transformers=_probe(HfAttention, outcomes.get("bench_hf")))


def _probe(model: Any, outcome: Optional[StageOutcome]) -> Probe[Any]:
    if outcome is None:
        return Probe.failed(Failure(kind=FailureKind.SKIPPED, reason="the stage did not run"))
    return probe_of(model, outcome)


# -- the report (pure) ----------------------------------------------------------------------------


class Row(_Frozen):
    target: str
    name: str
    status: Literal["timed", "failed", "untested"]
    detail: Optional[str] = None  # why it was not timed
    fwd: Optional[Timing] = None
    fwd_bwd: Optional[Timing] = None
    fraction_of_peak: Optional[float] = None  # forward+backward TFLOP/s over the dense peak
    first_call_s: Optional[float] = None


class Recommendation(_Frozen):
    target: str
    name: str
    tflops: float
    attn_implementation: Optional[str] = None
    note: str
    code: Optional[str] = None


class BenchReport(_Frozen):
    schema_version: int = 1
    fadoctor_version: str = __version__
    python: str
    shape: Shape
    gpu: Optional[str] = None
    peak_tflops: Optional[float] = None
    peak_source: Optional[str] = None
    rows: List[Row]
    recommendation: Optional[Recommendation] = None


def target_name(target: str, matrix: Matrix) -> str:
    if target in SDPA_NAMES:
        return SDPA_NAMES[target]
    return matrix.family_support(Family(target)).name


def _row(target: str, probe: Probe[BenchTarget], matrix: Matrix, peak: Optional[float]) -> Row:
    name = target_name(target, matrix)
    data = probe.data
    if data is None:
        assert probe.failure is not None
        return Row(target=target, name=name, status="failed",
                   detail=f"{probe.failure.kind.value}: {probe.failure.reason}")
    if data.timing is None:
        failed = data.check is not None and data.check.status in FAILED
        detail = data.skipped or data.import_error or ("not installed" if data.installed is False
                                                       else "not timed")
        return Row(target=target, name=name, status="failed" if failed else "untested",
                   detail=detail, first_call_s=data.first_call_s)
    fraction = data.timing.fwd_bwd.tflops / peak if peak else None
    return Row(target=target, name=name, status="timed", fwd=data.timing.fwd,
               fwd_bwd=data.timing.fwd_bwd, first_call_s=data.first_call_s,
               fraction_of_peak=round(fraction, 4) if fraction is not None else None)


def _peak(bench: BenchFacts, matrix: Matrix) -> Tuple[Optional[str], Optional[float], Optional[str]]:
    names = [p.data.device_name for p in bench.targets.values() if p.data and p.data.device_name]
    if not names:
        return None, None, None
    spec = matrix.gpu(names[0])
    if spec is None:
        return names[0], None, None
    peak = spec.dense_bf16_tflops if bench.shape.dtype == "bfloat16" else spec.dense_fp16_tflops
    return names[0], peak, spec.tflops_source if peak else None


def bench_report(bench: BenchFacts, matrix: Matrix) -> BenchReport:
    gpu, peak, source = _peak(bench, matrix)
    rows = [_row(t, p, matrix, peak) for t, p in bench.targets.items()]
    rows.sort(key=lambda r: (r.status != "timed", -(r.fwd_bwd.tflops if r.fwd_bwd else 0.0)))
    best = next((r for r in rows if r.status == "timed"), None)
    hf = bench.transformers.data if bench.transformers is not None else None
    return BenchReport(python=bench.python, shape=bench.shape, gpu=gpu, peak_tflops=peak,
                       peak_source=source, rows=rows,
                       recommendation=_recommend(best, hf) if best is not None else None)


def _recommend(best: Row, hf: Optional[HfAttention]) -> Recommendation:
    assert best.fwd_bwd is not None
    name = HF_NAMES.get(best.target)
    known = hf.attn_implementations if hf is not None and hf.installed else None
    if name is None:
        note = "transformers has no attn_implementation for it"
    elif name == "sdpa" or (known is not None and name in known):
        note = f'in transformers: attn_implementation="{name}"'
    elif hf is None or not hf.installed:
        name, note = None, "transformers is not installed in this environment"
    elif known is None:
        name, note = None, (f"fadoctor could not list the attention implementations of the "
                            f"installed transformers {hf.version or ''}; look for {name}")
    else:
        name, note = None, f"the installed transformers {hf.version or ''} registers no " \
                           f"{HF_NAMES[best.target]}"
    code = None
    if best.target.startswith("sdpa_") and best.target != "sdpa_math":
        code = sdpa_backends_code([best.target[len("sdpa_"):]])
    elif name == "sdpa":
        code = snippet("transformers_sdpa").code
    return Recommendation(target=best.target, name=best.name, tflops=best.fwd_bwd.tflops,
                          attn_implementation=name, note=note, code=code)
