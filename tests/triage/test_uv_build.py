"""uv's build failures read as builds (its own wordings), and its isolation fix is uv's documented
one; nvcc's other wording for an architecture it does not know."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

# written for this test, in uv's wording (uv-build-frontend, uv-distribution-types)
UV = ("error: Failed to download and build `flash-attn==2.7.4.post1`\n"
      "  Caused by: Build backend failed to determine requirements with `build_wheel()` (exit "
      "status: 1)\n[stderr]\nModuleNotFoundError: No module named 'torch'\n")


def test_uv_without_torch_in_its_isolated_build(matrix: Matrix) -> None:
    top = triage(UV, matrix).diagnosis[0]
    assert top.category == Category.BUILD_ISOLATION
    assert top.message.startswith("uv built flash-attn")
    code = " ".join(r.code or "" for r in top.remedies)
    assert "[tool.uv.extra-build-dependencies]" in code and "match-runtime = true" in code


def test_pip_isolation_stays_pip(matrix: Matrix) -> None:
    text = ("  Getting requirements to build wheel ... error\n"
            "  ModuleNotFoundError: No module named 'torch'\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_ISOLATION and top.message.startswith("pip built")


def test_nvcc_value_not_defined_for_gpu_architecture(matrix: Matrix) -> None:
    text = "nvcc fatal   : Value 'sm_120' is not defined for option 'gpu-architecture'\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_TOOLCHAIN and "sm_120" in top.message


def test_pixi_gets_its_own_manifest_switch(matrix: Matrix) -> None:
    text = ("$ pixi install\n  \u00d7 failed to build 'flash-attn'\n"
            "  ModuleNotFoundError: No module named 'torch'\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_ISOLATION and top.message.startswith("pixi built")
    assert 'no-build-isolation = ["flash-attn"]' in (top.remedies[0].code or "")


def test_a_requirements_step_failure_cut_before_its_error(matrix: Matrix) -> None:
    # uv's wording at the requirement step, the traceback cut before the ImportError
    text = ("# uv pip install --system flash-attn==2.6.1\nerror: Failed to prepare distributions\n"
            "  Caused by: Failed to fetch wheel: flash-attn==2.6.1\n  Caused by: Build backend "
            "failed to determine extra requires with `build_wheel()` with exit status: 1\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_ISOLATION
    assert "uv pip install flash-attn --no-build-isolation" in top.remedies[0].commands
