"""`fadoctor bench`: the pure ranking and recommendation, the rendering, and a real run on CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from tests.helpers.broken import requires_torch
from tests.helpers.fake_family import make_family

from fadoctor.bench.run import BenchFacts, BenchOptions, Shape, bench_report, collect_bench
from fadoctor.facts.kernels import BenchTarget, HfAttention
from fadoctor.facts.model import Failure, FailureKind, Probe
from fadoctor.matrix import Matrix, load_matrix
from fadoctor.matrix.models import GpuSpec
from fadoctor.render.bench import render_bench_json, render_bench_text


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(None)


CASE = {"api": "func", "dtype": "bfloat16", "causal": True, "gqa": True, "head_dim": 128,
        "batch": 2, "seqlen_q": 4096, "seqlen_k": 4096, "heads": 32, "kv_heads": 8,
        "backward": True}


def timing(fwd_tflops: float, fwd_bwd_tflops: float) -> Dict[str, Any]:
    def one(tflops: float) -> Dict[str, Any]:
        ms = 100.0 / tflops
        return {"median_ms": ms, "min_ms": ms * 0.98, "max_ms": ms * 1.05, "reps": 30,
                "tflops": tflops}
    return {"fwd": one(fwd_tflops), "fwd_bwd": one(fwd_bwd_tflops)}


def timed(target: str, fwd: float, fwd_bwd: float, first: float = 0.05) -> Probe[BenchTarget]:
    return Probe.success(BenchTarget.model_validate({
        "target": target, "device": "cuda", "device_name": "NVIDIA H200", "case": CASE,
        "check": {"case": CASE, "label": "x", "status": "passed"}, "first_call_s": first,
        "timing": timing(fwd, fwd_bwd)}))


def failed_check(target: str) -> Probe[BenchTarget]:
    return Probe.success(BenchTarget.model_validate({
        "target": target, "device": "cuda", "device_name": "NVIDIA H200", "case": CASE,
        "check": {"case": CASE, "label": "x", "status": "wrong"},
        "skipped": "its smoke test at this configuration did not pass (wrong)"}))


def facts(hf: Optional[HfAttention] = None, **targets: Probe[BenchTarget]) -> BenchFacts:
    return BenchFacts(python="/opt/venv/bin/python", shape=Shape(), targets=targets,
                      transformers=Probe.success(hf) if hf else None)


HF = HfAttention(installed=True, version="5.17.0",
                 attn_implementations=["eager", "flash_attention_2", "flash_attention_3",
                                       "flash_attention_4", "sdpa"])


def test_the_fastest_correct_target_wins_never_a_wrong_one(matrix: Matrix) -> None:
    bench = facts(HF, sdpa_flash=timed("sdpa_flash", 300, 250), fa2=failed_check("fa2"),
                  fa4=timed("fa4", 500, 420, first=9.1),
                  fa3=Probe.failed(Failure(kind=FailureKind.CRASH, reason="the worker died "
                                           "from SIGSEGV during stage bench_fa3")))
    report = bench_report(bench, matrix)
    assert [r.target for r in report.rows] == ["fa4", "sdpa_flash", "fa2", "fa3"]
    assert [r.status for r in report.rows] == ["timed", "timed", "failed", "failed"]
    rec = report.recommendation
    assert rec is not None and rec.target == "fa4" and rec.tflops == 420
    assert rec.attn_implementation == "flash_attention_4"
    assert rec.note == 'in transformers: attn_implementation="flash_attention_4"'
    assert report.gpu == "NVIDIA H200" and report.peak_tflops is None


def test_no_attn_implementation_is_claimed_that_the_installed_transformers_lacks(
        matrix: Matrix) -> None:
    old = HfAttention(installed=True, version="4.40.0", attn_implementations=["eager", "sdpa",
                                                                              "flash_attention_2"])
    rec = bench_report(facts(old, fa4=timed("fa4", 500, 420)), matrix).recommendation
    assert rec is not None and rec.attn_implementation is None
    assert "transformers 4.40.0 registers no flash_attention_4" in rec.note
    unlisted = HfAttention(installed=True, version="4.30.0", attn_implementations=None)
    rec = bench_report(facts(unlisted, fa4=timed("fa4", 500, 420)), matrix).recommendation
    assert rec is not None and rec.attn_implementation is None
    assert "could not list" in rec.note
    rec = bench_report(facts(None, fa4=timed("fa4", 500, 420)), matrix).recommendation
    assert rec is not None and rec.note == "transformers is not installed in this environment"
    # SDPA's name is cited with the transformers_sdpa snippet: offered without asking.
    rec = bench_report(facts(None, sdpa_cudnn=timed("sdpa_cudnn", 400, 380)), matrix) \
        .recommendation
    assert rec is not None and rec.attn_implementation == "sdpa"
    assert rec.code is not None and "SDPBackend.CUDNN_ATTENTION" in rec.code


def test_fraction_of_peak_only_where_the_matrix_has_a_sourced_peak(matrix: Matrix) -> None:
    peaked = GpuSpec(name="H200", cc="9.0", dense_bf16_tflops=1000.0,
                     tflops_source="a vendor datasheet (test)", source="test")
    with_peak = matrix.model_copy(update={"gpus": [peaked, *matrix.gpus]})
    report = bench_report(facts(HF, fa4=timed("fa4", 500, 420)), with_peak)
    assert report.peak_tflops == 1000.0 and report.rows[0].fraction_of_peak == 0.42
    assert report.peak_source == "a vendor datasheet (test)"


def test_the_text_has_a_table_bars_the_jit_note_and_the_verdict(matrix: Matrix) -> None:
    bench = facts(HF, sdpa_flash=timed("sdpa_flash", 300, 210), fa4=timed("fa4", 500, 420,
                                                                           first=9.1),
                  fa2=failed_check("fa2"))
    text = render_bench_text(bench_report(bench, matrix), width=120)
    lines = text.splitlines()
    assert lines[0] == ("fadoctor bench: bfloat16, causal, batch 2, seqlen 4096, 32 heads (8 kv), "
                        "head dim 128 on NVIDIA H200")
    bars = [ln for ln in lines if "█" in ln]
    assert len(bars) == 2 and bars[0].count("█") == 40 and bars[1].count("█") == 20
    assert "FlashAttention-4 (flash-attn-4, CuTe DSL): first call 9.1 s" in text
    assert "of peak: fadoctor's matrix has no sourced dense peak for this GPU" in text
    assert lines[-1] == ("Fastest correct: FlashAttention-4 (flash-attn-4, CuTe DSL) — 420.0 "
                         'TFLOP/s forward+backward; in transformers: attn_implementation='
                         '"flash_attention_4"')
    table = lines[1:lines.index("forward+backward TFLOP/s")]
    assert table[0].split()[:3] == ["target", "fwd", "ms"]
    assert table[1].split()[1:5] == ["0.200", "500.0", "0.238", "420.0"]  # fa4 first, fastest
    failed = next(i for i, ln in enumerate(table) if ln.startswith("FlashAttention-2"))
    note = " ".join(ln[90:].strip() for ln in table[failed:])
    assert note == "its smoke test at this configuration did not pass (wrong)"
    assert render_bench_json(bench_report(bench, matrix)).startswith("{")


def test_text_from_the_environment_is_data_in_the_bench_table(matrix: Matrix) -> None:
    """A worker's failure quoting the environment: rich markup stays text (a stray closing tag
    would otherwise stop the render), escape sequences are shown escaped, lines join."""
    hostile = Probe[BenchTarget].failed(Failure(
        kind=FailureKind.IMPORT_ERROR, reason="[/bold] no [red]module\n\x1b]0;pwned\x07 here"))
    text = render_bench_text(bench_report(facts(HF, fa2=hostile), matrix), width=200)
    row = next(ln for ln in text.splitlines() if ln.startswith("FlashAttention-2"))
    assert "[/bold] no [red]module \\x1b]0;pwned\\x07 here" in row
    assert "\x1b" not in text and "\x07" not in text


def test_nothing_correct_means_no_recommendation(matrix: Matrix) -> None:
    report = bench_report(facts(HF, fa2=failed_check("fa2")), matrix)
    assert report.recommendation is None
    assert "nothing to recommend" in render_bench_text(report)


@pytest.mark.slow
@requires_torch
def test_a_real_bench_on_cpu_times_the_right_kernel_and_skips_the_wrong_one(
        tmp_path: Path, matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    make_family(site, "right", "fa2")
    make_family(site, "wrong", "fa4", "4.0.0b36")
    env = dict(os.environ, PYTHONPATH=str(site))
    shape = Shape(batch=1, seqlen=128, heads=4, kv_heads=2, head_dim=64)
    options = BenchOptions(shape=shape, reps=3, warmup=1, device="cpu",
                           targets=("sdpa_math", "sdpa_flash", "fa2", "fa4"))
    bench = collect_bench(sys.executable, env, options)
    report = bench_report(bench, matrix)
    status = {r.target: r.status for r in report.rows}
    assert status == {"sdpa_math": "timed", "fa2": "timed", "fa4": "failed",
                      "sdpa_flash": "untested"}
    fa4 = next(r for r in report.rows if r.target == "fa4")
    assert fa4.detail == "its smoke test at this configuration did not pass (wrong)"
    assert report.recommendation is not None and report.recommendation.target in ("sdpa_math",
                                                                                  "fa2")
    timing = next(r for r in report.rows if r.target == "fa2").fwd_bwd
    assert timing is not None and timing.reps == 3 and timing.median_ms > 0
    assert bench.transformers is not None and bench.transformers.data is not None
    assert bench.transformers.data.installed is False  # not in the test environment


@pytest.mark.parametrize(("args", "words"), [
    (["--target", "fa9"], ["--target fa9", "sdpa_flash"]),
    (["--heads", "12", "--kv-heads", "5"], ["--kv-heads 5 must divide --heads 12"]),
])
def test_bad_bench_usage_is_one_line_and_exit_2(args: List[str], words: List[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "fadoctor", "bench", *args], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == "", done
    [line] = done.stderr.splitlines()
    assert line.startswith("fadoctor: error: ") and all(w in line for w in words)
