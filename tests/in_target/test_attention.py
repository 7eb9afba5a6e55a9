"""The attention stages run for real, in this process, on CPU torch: cases, judging, the harness."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
import torch
from tests.helpers.fake_family import make_family

from fadoctor.in_target import attention
from fadoctor.in_target.attention import cases, judge
from fadoctor.in_target.attention.calls import Sdpa, make_inputs

SMALL = {"batch": 1, "seqlen": 64, "heads": 4, "kv_heads": 2}
CPU: Dict[str, Any] = {"device": "cpu", "shape": SMALL}


def test_stage_names_round_trip_and_unknown_ones_are_refused() -> None:
    for kind in attention.KINDS:
        for target in attention.TARGETS:
            assert attention.parse(attention.stage_name(kind, target)) == (kind, target)
    assert attention.parse("compile_sdpa") == ("compile", "sdpa")
    assert attention.parse("bench_hf") == ("bench", "hf")
    for bad in ("smoke_sdpa", "smoke_fa5", "torch", "fa2", "smoke_hf"):
        with pytest.raises(ValueError, match="unknown attention stage"):
            attention.parse(bad)


def test_default_set_is_one_bf16_causal_gqa_hd128_case_and_full_is_the_grid() -> None:
    [default] = cases.grid("fa2", {})
    assert (default.api, default.dtype, default.causal, default.gqa, default.head_dim,
            default.backward) == ("func", "bfloat16", True, True, 128, True)
    assert (default.batch, default.seqlen_q, default.heads, default.kv_heads) == (2, 512, 16, 4)
    full = cases.grid("fa2", {"grid": "full"})
    assert len(full) == 3 * 2 * 2 * 2 * 3  # apis x dtypes x causal x gqa x head dims
    assert {c.head_dim for c in full} == {64, 128, 256}
    kvcache = [c for c in full if c.api == "kvcache"]
    assert kvcache and all(not c.backward and c.seqlen_q == 16 for c in kvcache)
    assert len(cases.grid("sdpa_flash", {"grid": "full"})) == 24
    assert cases.shrink([default], 4)[0].seqlen_k == 128


def test_the_reference_is_softmax_attention_with_a_bottom_right_causal_mask() -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 1, 4), torch.randn(1, 3, 1, 4), torch.randn(1, 3, 1, 4)
    out = judge.attention(torch, q, k, v, causal=True)
    # Query 0 of 2 over 3 keys sees keys 0 and 1 (bottom-right alignment), query 1 all three.
    s = (q[0, 0, 0] @ k[0, :2, 0].T) / math.sqrt(4)
    expected = torch.softmax(s, -1) @ v[0, :2, 0]
    assert torch.allclose(out[0, 0, 0], expected, atol=1e-6)
    full = judge.attention(torch, q, k, v, causal=False)
    assert torch.allclose(full[0, 1, 0], out[0, 1, 0], atol=1e-6)


def _judge_one(got: torch.Tensor, ref: torch.Tensor, pt: torch.Tensor) -> str:
    status, _ = judge.judge(torch, [got], [ref], [pt], ["out"])
    return status


def test_the_rule_passes_a_kernel_as_good_as_pytorch_and_fails_a_wrong_or_nan_one() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 32, 2, 16, dtype=torch.bfloat16) for _ in range(3))
    ref = judge.attention(torch, q, k, v, causal=True)
    pt = judge.attention(torch, q, k, v, causal=True, upcast=False, reorder=True)
    assert _judge_one(pt, ref, pt) == "passed"
    assert _judge_one(ref * 1.05, ref, pt) == "wrong"
    nan = ref.clone()
    nan[0, 3, 1, 2] = float("nan")
    assert _judge_one(nan, ref, pt) == "nonfinite"
    inf = ref.clone()
    inf[0, 0, 0, 0] = float("inf")
    assert _judge_one(inf, ref, pt) == "nonfinite"
    # The epsilon is twice the bf16 rounding error at the reference's magnitude.
    assert judge.epsilon(ref) == pytest.approx(
        2 * float((ref + 0.3 - 0.3 - ref).abs().max()))


def test_sdpa_math_forward_and_backward_pass_on_cpu() -> None:
    data = attention.run("smoke_sdpa_math", CPU)
    [case] = data["cases"]
    assert case["status"] == "passed", case
    assert [e["tensor"] for e in case["errors"]] == ["out", "dq", "dk", "dv"]
    for entry in case["errors"]:
        assert entry["finite"] and entry["error"] <= entry["tolerance"]
    assert data["gpu"] is None and data["grid"] == "default"
    assert data["first_call"]["repeat_s"] > 0


def test_gpu_backends_are_not_applicable_on_cpu_never_failed() -> None:
    for target in ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn"):
        [case] = attention.run(f"smoke_{target}", CPU)["cases"]
        assert case["status"] == "not_applicable", case
        assert "CUDA tensors" in case["reason"]


def test_no_cuda_and_no_device_means_skipped_with_the_reason() -> None:
    data = attention.run("smoke_sdpa_math", {"shape": SMALL})
    assert data["skipped"] == "CUDA is not available to torch" and "cases" not in data


def test_a_family_that_is_not_installed_is_said_so() -> None:
    from fadoctor.in_target.tables import FAMILIES

    data = attention.run("smoke_fa3", {**CPU, "families": FAMILIES})
    assert data["installed"] is False and "cases" not in data


def test_sdpa_eligibility_uses_the_backends_own_check_on_cuda_tensors_only() -> None:
    case = cases.make("sdpa", "bfloat16", True, True, 64, SMALL)
    x = make_inputs(torch, case, "cpu")
    assert Sdpa(torch, "math").not_applicable(case, x, "cpu") is None
    assert Sdpa(torch, None).not_applicable(case, x, "cpu") is None


def test_the_compile_probe_explains_and_compiles_sdpa_fullgraph() -> None:
    data = attention.run("compile_sdpa", {**CPU, "compile_backend": "eager"})
    assert data["explain"]["ok"] and data["explain"]["graph_break_count"] == 0
    assert data["explain"]["graph_count"] == 1
    full = data["fullgraph"]
    assert full["ok"] and full["correct"] and full["backend"] == "eager"
    assert data["custom_ops"] == []  # no flash-attention ops registered in this environment


def test_the_compile_probe_reports_a_graph_break_with_its_reason() -> None:
    """A C call Dynamo cannot trace, as a flash-attn before 2.7 calls its pybind extension."""
    import ctypes

    from fadoctor.in_target.attention import compile_probe

    libc = ctypes.CDLL(None)

    class Module(torch.nn.Module):  # type: ignore[misc]
        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            q = q * 2
            libc.getpid()
            return judge.attention(torch, q, k, v, causal=True)

    case = cases.make("func", "bfloat16", True, True, 64, SMALL)
    x = make_inputs(torch, case, "cpu")
    explained = compile_probe.explain(torch, Module(), [x.q, x.k, x.v])
    assert explained["ok"] and explained["graph_break_count"] == 1
    assert explained["graph_count"] == 2
    assert "_FuncPtr" in explained["break_reasons"][0]
    full = compile_probe.fullgraph(torch, Module(), case, x, {"compile_backend": "eager"})
    assert not full["ok"] and full["error"]["exception_type"]


def test_a_gpu_is_busy_only_for_other_processes_known_to_be_others() -> None:
    from fadoctor.in_target.attention.gpu import busy_reason

    gpu: Dict[str, Any] = {"index": 0, "utilization": 99, "processes": [
        {"pid": 1, "ours": True, "used_mib": 900}]}
    assert busy_reason(gpu) is None  # our own lanes computing
    assert busy_reason(dict(gpu, processes=None)) is None  # PIDs of another namespace: unknown
    gpu["processes"].append({"pid": 2, "ours": False, "used_mib": 70000})
    assert busy_reason(gpu) == ("1 other process(es) on GPU 0 hold 70000 MiB; GPU 0 is 99% busy")


def test_cases_shrink_to_fit_free_memory_or_are_skipped_with_the_reason() -> None:
    from fadoctor.in_target.attention.smoke import fit

    todo = cases.grid("fa2", {})
    roomy = {"index": 0, "free_mib": 100000, "busy": None}
    assert fit(todo, roomy) == (todo, None, 1)
    assert fit(todo, None) == (todo, None, 1)  # a CPU run
    tight = dict(roomy, free_mib=200)
    shrunk, reason, factor = fit(todo, tight)
    assert reason is None and factor in (2, 4) and shrunk[0].seqlen_k == 512 // factor
    full = dict(roomy, free_mib=10, busy="1 other process(es) on GPU 0 hold 80000 MiB")
    left, reason, factor = fit(todo, full)
    assert left == [] and factor == 0
    assert reason is not None and reason.startswith("GPU 0 has 10 MiB free, less than the ")
    assert reason.endswith("; 1 other process(es) on GPU 0 hold 80000 MiB")


def test_gqa_with_the_kv_heads_expanded_is_the_same_attention_and_gradients() -> None:
    case = cases.make("sdpa", "float32", True, True, 64, SMALL)
    x = make_inputs(torch, case, "cpu")
    native = Sdpa(torch, "math").forward(case, x)
    grads = torch.autograd.grad(native.sum(), (x.q, x.k, x.v))
    repeated = Sdpa(torch, "math").expanded().forward(case, x)
    again = torch.autograd.grad(repeated.sum(), (x.q, x.k, x.v))
    torch.testing.assert_close(repeated, native)
    for a, b in zip(again, grads):  # dk, dv come back in the grouped (kv_heads) shape
        assert a.shape == b.shape
        torch.testing.assert_close(a, b)


def test_a_backend_refusing_only_gqa_is_proven_with_the_kv_heads_expanded() -> None:
    """A real check refusal of GQA alone (torch < 2.5 has no enable_gqa), then the expansion."""
    from fadoctor.in_target.attention.smoke import expanded, gqa_refused, run_case

    case = cases.make("sdpa", "bfloat16", True, True, 64, SMALL)
    impl = Sdpa(torch, "math")
    impl.version = (2, 4)
    refused = run_case(torch, impl, case, "cpu")
    assert refused["status"] == "not_applicable" and refused["refused_by"] == "check"
    assert gqa_refused(impl, case, refused)
    proven = expanded(torch, impl, case, "cpu", refused)
    assert proven["status"] == "passed" and proven["kv_expanded"] is True, proven
    assert "enable_gqa refused: SDPA of torch" in proven["reason"]
    assert proven["label"].endswith("key/value heads expanded")
    assert not gqa_refused(impl.expanded(), case, refused)  # never expanded twice


def test_a_refusal_that_is_not_gqa_alone_adds_no_expanded_case() -> None:
    data = attention.run("smoke_sdpa_flash", CPU)  # CPU tensors: refused with or without GQA
    [case] = data["cases"]
    assert case["refused_by"] == "check" and "kv_expanded" not in case


def test_the_cuda_warm_up_runs_the_reference_and_never_raises(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """The first CUDA work that overlaps a family's import: on CPU tensors it runs the reference
    forward and backward without error; on a thread, asked for a GPU that this torch does not
    have, its error is left to the cases (the thread ends quietly, and setup still loads the
    family it was overlapping)."""
    from fadoctor.in_target.attention import smoke
    from fadoctor.in_target.tables import FAMILIES

    smoke.warm_up(torch, "cpu")  # raises if the reference's forward or backward does
    with pytest.raises((AssertionError, RuntimeError), match="CUDA"):  # the CPU build...
        smoke.warm_up(torch, "cuda")
    failing = smoke.warm(torch, "cuda")  # ...raises; the thread keeps it to itself
    failing.join(60)
    assert not failing.is_alive()
    make_family(tmp_path, "right", "fa2")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        _torch, impl, data = smoke.setup("fa2", {"device": "cuda", "families": FAMILIES})
    finally:
        sys.modules.pop("flash_attn", None)
    assert impl is not None and data["device"] == "cuda"
