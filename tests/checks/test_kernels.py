"""FAD140 (kernel smoke tests) and FAD141 (torch.compile) on facts that say what ran."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Dict, List

import pytest

from fadoctor.checks.base import Skip
from fadoctor.checks.compile import check_compile
from fadoctor.checks.kernel_remedies import classify_error
from fadoctor.checks.kernels import check_smoke
from fadoctor.facts.kernels import CompileTarget, SmokeTarget
from fadoctor.facts.model import Facts, FailureKind, Family, KernelRun, Probe
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Severity

CASE = {"api": "func", "dtype": "bfloat16", "causal": True, "gqa": True, "head_dim": 128,
        "batch": 2, "seqlen_q": 512, "seqlen_k": 512, "heads": 16, "kv_heads": 4,
        "backward": True}
LABEL = "flash_attn_func, bfloat16, head dim 128, causal, GQA 16/4 heads, forward+backward"
GPU = {"index": 0, "source": "nvml", "free_mib": 140000, "total_mib": 143771,
       "processes": [], "utilization": 0}


def case(status: str, api: str = "func", **extra: Any) -> Dict[str, Any]:
    spec = dict(CASE, api=api)
    return {"case": spec, "label": LABEL if api == "func" else "scaled_dot_product_attention, "
            "bfloat16, head dim 128, causal, GQA 16/4 heads, forward+backward",
            "status": status, **extra}


def target(name: str, *cases: Dict[str, Any], **extra: Any) -> Probe[SmokeTarget]:
    data = {"target": name, "torch": "2.8.0+cu128", "device": "cuda", "grid": "default",
            "gpu": GPU, "cases": list(cases), **extra}
    return Probe.success(SmokeTarget.model_validate(data))


def passing(name: str) -> Probe[SmokeTarget]:
    return target(name, case("passed", "sdpa" if name.startswith("sdpa") else "func"))


def with_smoke(facts: Facts, targets: Dict[str, Probe[SmokeTarget]],
               grid: str = "default") -> Facts:
    return facts.model_copy(update={"smoke": KernelRun[SmokeTarget](grid=grid, targets=targets)})


@pytest.fixture
def h200_fa2(build: ModuleType) -> Facts:
    """An H200 with torch 2.8.0+cu128 and flash-attn 2.8.3 that imports."""
    site = "/opt/venv/lib/python3.12/site-packages"
    gpu = build.gpu("NVIDIA H200", "9.0")
    torch = build.torch("2.8.0+cu128", "12.8", "7.5;8.0;8.6;9.0;10.0;12.0+PTX", [gpu],
                        sdpa_backends=build.sdpa("2.8.0"))
    fa2 = build.family(Family.FA2, "2.8.3", build.imported("flash_attn", site, "2.8.3"))
    return build.facts(build.host("3.12.3"), build.packages(build.dist("torch", "2.8.0", site)),
                       build.driver("580.95.05", "13.0", [gpu]), torch, [fa2])


def sdpa_all_pass() -> Dict[str, Probe[SmokeTarget]]:
    return {t: passing(t) for t in ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math")}


def findings(facts: Facts, matrix: Matrix) -> List[Finding]:
    outcome = check_smoke(facts, matrix)
    assert not isinstance(outcome, Skip), outcome
    return outcome


def test_not_run_and_no_gpu_are_skips_with_the_reason(h200_fa2: Facts, matrix: Matrix) -> None:
    outcome = check_smoke(h200_fa2, matrix)
    assert isinstance(outcome, Skip) and "--kernels none" in outcome.reason
    skipped = h200_fa2.model_copy(update={"smoke": KernelRun[SmokeTarget](
        grid="default", skipped="the driver probe (nvml) found no NVIDIA GPU")})
    outcome = check_smoke(skipped, matrix)
    assert isinstance(outcome, Skip) and "found no NVIDIA GPU" in outcome.reason
    no_cuda = {t: Probe.success(SmokeTarget(target=t, skipped="CUDA is not available to torch"))
               for t in ("sdpa_flash", "sdpa_math")}
    outcome = check_smoke(with_smoke(h200_fa2, no_cuda), matrix)
    assert isinstance(outcome, Skip) and "CUDA is not available" in outcome.reason


def test_everything_passing_is_one_line_naming_the_set(h200_fa2: Facts, matrix: Matrix) -> None:
    targets = {**sdpa_all_pass(), "fa2": passing("fa2"),
               "fa4": Probe.success(SmokeTarget(target="fa4", installed=False))}
    [summary] = findings(with_smoke(h200_fa2, targets), matrix)
    assert summary.severity == Severity.INFO
    assert summary.message.startswith("default set — passed: SDPA flash, SDPA efficient, "
                                      "SDPA cuDNN, SDPA math, flash-attn 2.8.3")
    assert "fa4" not in str(summary.evidence["targets"])  # not installed: nothing to test


def test_a_wrong_family_kernel_names_the_case_and_offers_the_wheel_and_sdpa(
        h200_fa2: Facts, matrix: Matrix) -> None:
    wrong = case("wrong", errors=[{"tensor": "out", "finite": True, "multiple": 2.0,
                                   "ok": False, "error": 0.31, "pytorch_error": 0.0039,
                                   "tolerance": 0.0117}])
    targets = {**sdpa_all_pass(), "fa2": target("fa2", wrong)}
    [failure, summary] = findings(with_smoke(h200_fa2, targets), matrix)
    assert failure.severity == Severity.ERROR and failure.category == Category.NUMERICS
    assert failure.message == (
        f"flash-attn 2.8.3: 1 case(s) failed: [{LABEL}] wrong: out is off by 0.31 (tolerance "
        "0.0117: 2x PyTorch's own 0.0039 + rounding)")
    summaries = [r.summary for r in failure.remedies]
    assert summaries[0].startswith("Install flash-attn ")  # the exact wheel for this torch
    assert any("SDPA, which passed" in s for s in summaries)
    code = [r.code for r in failure.remedies if r.code]
    assert any("SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, "
               "SDPBackend.CUDNN_ATTENTION" in c for c in code)
    assert "failed: flash-attn 2.8.3" in summary.message


def test_nan_gradients_are_numerics_naming_the_tensors(h200_fa2: Facts, matrix: Matrix) -> None:
    nan = case("nonfinite", errors=[
        {"tensor": "out", "finite": True, "multiple": 2.0, "ok": True, "error": 0.001,
         "pytorch_error": 0.004, "tolerance": 0.01},
        {"tensor": "dq", "finite": False, "multiple": 3.0, "ok": False}])
    [failure, _] = findings(with_smoke(h200_fa2, {"fa2": target("fa2", nan)}), matrix)
    assert failure.category == Category.NUMERICS and "NaN/Inf in dq" in failure.message


@pytest.mark.parametrize("message, category", [
    ("CUDA error: no kernel image is available for execution on the device",
     Category.NO_KERNEL_IMAGE),
    ("FlashAttention only supports Ampere GPUs or newer.", Category.GPU_UNSUPPORTED),
    ("CUDA error: an illegal memory access was encountered", Category.KERNEL_FAILURE),
])
def test_runtime_errors_are_classified(h200_fa2: Facts, matrix: Matrix, message: str,
                                       category: Category) -> None:
    error = case("error", phase="backward", exception_type="RuntimeError", message=message)
    [failure, _] = findings(with_smoke(h200_fa2, {"fa2": target("fa2", error)}), matrix)
    assert failure.severity == Severity.ERROR and failure.category == category
    assert f"backward raised RuntimeError: {message}" in failure.message


def test_a_refused_head_dim_is_information_not_a_failure(h200_fa2: Facts, matrix: Matrix) -> None:
    assert classify_error("FlashAttention forward only supports head dimension at most 256") \
        .unsupported_input
    refused = case("error", phase="forward", exception_type="RuntimeError",
                   message="FlashAttention forward only supports head dimension at most 256")
    out = findings(with_smoke(h200_fa2, {"fa2": target("fa2", case("passed"), refused)},
                              "full"), matrix)
    assert all(f.severity == Severity.INFO for f in out)
    assert out[0].category == Category.HEAD_DIM_UNSUPPORTED
    assert out[-1].message.startswith("full set")


def test_a_crashed_stage_is_a_kernel_failure_with_remedies(h200_fa2: Facts,
                                                           build: ModuleType,
                                                           matrix: Matrix) -> None:
    crash = Probe[SmokeTarget].failed(build.failed(
        "the worker died from SIGSEGV during stage smoke_fa2", kind=FailureKind.CRASH,
        exception_type=None, signal="SIGSEGV"))
    out = findings(with_smoke(h200_fa2, {**sdpa_all_pass(), "fa2": crash}), matrix)
    assert out[0].category == Category.KERNEL_FAILURE and out[0].severity == Severity.ERROR
    assert "crashed: the worker died from SIGSEGV" in out[0].message
    assert out[0].remedies and "crashed: flash-attn 2.8.3" in out[-1].message


def test_a_busy_gpu_is_a_warning_never_a_failure(h200_fa2: Facts, matrix: Matrix) -> None:
    busy = dict(GPU, free_mib=300, processes=[{"pid": 4242, "ours": False, "used_mib": 140000}],
                utilization=97, busy="1 other process(es) on GPU 0 hold 140000 MiB; GPU 0 is "
                "97% busy")
    skipped = Probe.success(SmokeTarget.model_validate({
        "target": "sdpa_flash", "device": "cuda", "grid": "default", "gpu": busy, "shrunk": 0,
        "skipped": "GPU 0 has 300 MiB free, less than the 400 MiB the smallest case needs"}))
    out = findings(with_smoke(h200_fa2, {"sdpa_flash": skipped,
                                         "sdpa_math": target("sdpa_math", case("passed", "sdpa"),
                                                             gpu=busy, shrunk=0)}), matrix)
    assert [f.category for f in out if f.severity != Severity.INFO] == [Category.GPU_BUSY]
    assert out[0].severity == Severity.WARNING
    assert "GPU 0 is shared (1 other process(es)" in out[0].message
    assert "not tested" in out[0].message and out[0].remedies


def compile_facts(facts: Facts, **targets: Dict[str, Any]) -> Facts:
    run = KernelRun[CompileTarget](targets={
        t: Probe.success(CompileTarget.model_validate({"target": t, **d}))
        for t, d in targets.items()})
    return facts.model_copy(update={"compile": run})


def test_compile_passes_with_custom_ops_and_flags_a_break_with_remedies(
        h200_fa2: Facts, matrix: Matrix) -> None:
    assert isinstance(check_compile(h200_fa2, matrix), Skip)
    ok = {"custom_ops": ["flash_attn::_flash_attn_forward"],
          "explain": {"ok": True, "graph_count": 1, "graph_break_count": 0},
          "fullgraph": {"ok": True, "backend": "inductor", "seconds": 21.5, "correct": True}}
    [finding] = check_compile(compile_facts(h200_fa2, fa2=ok), matrix)  # type: ignore[misc]
    assert finding.severity == Severity.INFO
    assert "compiles and runs forward+backward (inductor, 21.5 s); custom ops: " \
           "flash_attn::_flash_attn_forward" in finding.message
    old = h200_fa2.model_copy(update={"flash_attention": [
        fa.model_copy(update={"version": "2.6.3"}) if fa.family == Family.FA2 else fa
        for fa in h200_fa2.flash_attention]})
    broken = {"custom_ops": [], "explain": {
        "ok": True, "graph_count": 2, "graph_break_count": 1,
        "break_reasons": ["Graph break due to unsupported builtin flash_attn_2_cuda.PyCapsule.fwd"]},
        "fullgraph": {"ok": False, "backend": "inductor", "error": {
            "exception_type": "Unsupported", "message": "Graph break due to unsupported builtin "
            "flash_attn_2_cuda.PyCapsule.fwd"}}}
    [finding] = check_compile(compile_facts(old, fa2=broken), matrix)  # type: ignore[misc]
    assert finding.severity == Severity.WARNING
    assert finding.category == Category.COMPILE_GRAPH_BREAK
    assert "1 graph break(s)" in finding.message and "no flash-attention custom ops" in \
        finding.message
    first = finding.remedies[0]
    assert first.commands == ['pip install "flash-attn>=2.7.0" --no-build-isolation']
    assert "torch >= 2.4" in first.summary
    codes = [r.code or "" for r in finding.remedies]
    assert any("@torch.compiler.disable" in c for c in codes)
    assert any("suppress_errors = True" in c for c in codes)




@pytest.mark.parametrize("message, exception_type", [
    ("(head_dim, head_dim_v)=(256, 256) is not supported on SM100/SM110. head_dim and head_dim_v "
     "must be between 8 and 128 and divisible by 8, or (192, 128) for DeepSeek", "AssertionError"),
    ("FlashAttention only support fp16 and bf16 data type", "RuntimeError"),
    ("FA4 CuTe FP8 backward is not supported yet (forward-only).", "NotImplementedError"),
])
def test_inputs_a_family_refuses_are_not_broken_kernels(message: str,
                                                        exception_type: str) -> None:
    assert classify_error(message, exception_type).unsupported_input
    assert not classify_error("CUDA error: an illegal memory access was encountered",
                              "RuntimeError").unsupported_input
    assert classify_error("Unsupported compute capability. Supported: 8.x, 9.x",
                          "AssertionError").category == Category.GPU_UNSUPPORTED
