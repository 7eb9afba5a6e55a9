"""FAD140/FAD141 on kernel facts recorded on a real GPU machine (benchmarks/gpu_kernels.py writes
them: facts-kernels-default.json, facts-kernels-full.json, facts-compile.json). They stand in for
the GPU this machine lacks; copy them to tests/fixtures/recorded/ as h200-kernels-*.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from fadoctor.evaluate import evaluate
from fadoctor.facts.model import Facts
from fadoctor.matrix import Matrix
from fadoctor.report import Severity, Status

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"
FILES = sorted(RECORDED.glob("*-kernels-*.json")) + sorted(RECORDED.glob("*-compile.json"))


@pytest.mark.skipif(not FILES, reason="no kernel facts recorded yet: run benchmarks/gpu_kernels.py "
                    "on a GPU machine and copy its facts-*.json here")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_recorded_kernel_facts_pass_their_checks(path: Path, matrix: Matrix) -> None:
    facts = Facts.model_validate_json(path.read_text(encoding="utf-8"))
    report = evaluate(facts, matrix)
    by_id = {c.id: c for c in report.checks}
    if facts.smoke is not None:
        smoke = by_id["FAD140"]
        assert smoke.status in (Status.PASSED, Status.WARNING), smoke
        assert not [f for f in smoke.findings if f.severity == Severity.ERROR]
        assert smoke.findings[-1].message.startswith(f"{facts.smoke.grid} set — passed: ")
    if facts.compile is not None:  # SDPA compiles; flash-attn-4's graph break is a warning
        compiled = by_id["FAD141"]
        assert compiled.status in (Status.PASSED, Status.WARNING), compiled
        assert not [f for f in compiled.findings if f.severity == Severity.ERROR]


@pytest.mark.parametrize(("name", "how"), [
    ("h200-crash-cuda-segfault", "died from SIGSEGV during stage smoke_fa2"),
    ("h200-crash-device-assert", "device-side assert triggered"),
])
def test_a_kernel_that_kills_its_worker_on_the_gpu_is_survived(name: str, how: str,
                                                               matrix: Matrix) -> None:
    """Recorded on the H200 by gpu_kernels.py's crash step: a fake flash-attn whose kernel dies
    inside a CUDA driver call (SIGSEGV), or trips a device-side assert, beside flash-attn-4. The
    fake is a kernel_failure; every SDPA backend and flash-attn-4 still pass after it."""
    facts = Facts.model_validate_json((RECORDED / f"{name}.json").read_text(encoding="utf-8"))
    smoke = {c.id: c for c in evaluate(facts, matrix).checks}["FAD140"]
    assert smoke.status == Status.FAILED
    (failure,) = [f for f in smoke.findings if f.severity == Severity.ERROR]
    assert failure.category.value == "kernel_failure" and how in failure.message
    assert failure.message.startswith("flash-attn 2.8.3")
    summary = smoke.findings[-1].message
    assert ("passed: SDPA flash, SDPA efficient, SDPA cuDNN, SDPA math, flash-attn-4 4.0.0b36"
            in summary)
