"""The checks on facts recorded on a real H200 machine (tests/fixtures/recorded/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fadoctor.evaluate import evaluate
from fadoctor.facts.model import Facts, Family
from fadoctor.install.fa4 import newest_fa4
from fadoctor.matrix import Matrix
from fadoctor.report import CheckResult, Report, Status

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def load(name: str) -> Facts:
    return Facts.model_validate_json((RECORDED / f"{name}.json").read_text(encoding="utf-8"))


def check(report: Report, check_id: str) -> CheckResult:
    return next(c for c in report.checks if c.id == check_id)


@pytest.fixture(scope="module")
def with_fa4(matrix: Matrix) -> Report:
    return evaluate(load("h200-torch211-cu130-flash-attn-4"), matrix)


def test_the_recorded_machine_is_what_it_says() -> None:
    facts = load("h200-torch211-cu130-flash-attn-4")
    assert facts.driver.data is not None and facts.torch.data is not None
    assert [(g.name, g.compute_capability) for g in facts.driver.data.gpus] == [
        ("NVIDIA H200", "9.0")]
    assert facts.torch.data.version == "2.11.0+cu130" and facts.torch.data.cuda_available
    fa4 = facts.family(Family.FA4)
    assert fa4 is not None and fa4.version == "4.0.0b36"
    assert fa4.imported is not None and fa4.imported.ok


def test_flash_attn_4_on_h200_has_no_problem_and_one_hint(with_fa4: Report) -> None:
    assert with_fa4.summary.failed == 0 and with_fa4.summary.warning == 0
    for check_id in ("FAD101", "FAD104", "FAD106", "FAD111", "FAD112", "FAD120"):
        assert check(with_fa4, check_id).status == Status.PASSED, check_id
    [hint] = [f for f in check(with_fa4, "FAD113").findings if f.remedies]
    assert hint.severity == "info"
    # A uv-made environment (no pip): uv installs into it, by its interpreter's path.
    assert hint.remedies[0].commands == [
        'uv pip install --python /opt/torch/.venv/bin/python3 "flash-attn-4[cu13]==4.0.0b36"']
    sdpa = check(with_fa4, "FAD120").findings[0].message
    assert "flash, efficient, cudnn" in sdpa


def test_without_flash_attention_fa4_is_offered_and_fa2_is_a_build(matrix: Matrix) -> None:
    report = evaluate(load("h200-torch211-cu130-no-flash-attn"), matrix)
    [finding] = check(report, "FAD110").findings
    assert (finding.severity, finding.category) == ("warning", "not_installed")
    commands = [c for r in finding.remedies for c in r.commands]
    # Pinned (every 4.x is a pre-release) and into the examined (uv-made) environment.
    newest = newest_fa4(matrix)
    assert commands[0] == ("uv pip install --python /opt/torch/.venv/bin/python3 "
                           f'"flash-attn-4[cu13]=={newest}"')
    assert any("FLASH_ATTN_CUDA_ARCHS=90" in c for c in commands)  # no FA2 wheel for torch 2.11


def test_static_analysis_of_torchs_own_cuda_libraries(matrix: Matrix) -> None:
    facts = load("h200-torch211-cu130-static-torch-cuda-libs")
    assert facts.mode == "static"
    assert facts.files is not None and facts.files.data is not None
    assert facts.files.data.torch is not None and facts.files.data.torch.cxx11_abi is True
    report = evaluate(facts, matrix)
    assert check(report, "FAD102").status == Status.SKIPPED
    for check_id in ("FAD130", "FAD131", "FAD132", "FAD133"):
        assert check(report, check_id).status == Status.PASSED, check_id
    kernels = check(report, "FAD133").findings[0]
    # A file named with --extension is shown by its full path, never a bare file name.
    assert kernels.message.startswith("/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/"
                                      "libtorch_cuda.so has kernels for sm_90")
