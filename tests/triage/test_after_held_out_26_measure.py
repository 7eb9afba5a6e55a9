"""What held_out_26's measure showed, fixed after it (labelled in docs/triage-catalog.md, not
counted as held-out results), each on a text written for the test: a GPU named by its number
after "the" or "support", FA3's fp8 on Ampere/Ada, a `.half()` comparison read as rounding, and
a feature gate (FP8 on SM100 only) that no later beta lifts."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category


def test_fa3_fp8_on_an_ada_gpu_named_by_its_number(matrix: Matrix) -> None:
    found = top("Can FA3 run fp8 attention on the 4080?\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "Hopper" in said(found)


def test_a_half_comparison_is_rounding(matrix: Matrix) -> None:
    found = top("out = flash_attn_func(q.half(), k.half(), v.half())\nthe result does not match "
                "my einsum attention, what is wrong with my code?\n", matrix)
    assert found.category == Category.INFO and "fp32" in said(found)


def test_a_feature_gate_is_not_lifted_by_a_later_beta(matrix: Matrix) -> None:
    found = top("GPU: the 5080\nAssertionError: FP8 is only supported on SM100 (compute capability "
                "10.x) for FA4 CuTe.\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED
    assert "without FP8" in said(found) and "first beta" not in said(found)


def test_a_source_checkout_shadowing_the_installed_wheel(matrix: Matrix) -> None:
    found = top("pip install fastserve\nTraceback (most recent call last):\n"
                '  File "/home/me/code/fastserve/fastserve/engine/core.py", line 9, in <module>\n'
                "    import _fastserve_ops as ops\nModuleNotFoundError: No module named "
                "'_fastserve_ops'\n", matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "outside the source directory" in said(found)


def test_an_attribute_error_retold_in_a_title(matrix: Matrix) -> None:
    found = top("`triton.language' has no attribute cast` after updating\ntriton==2.3.1\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "triton" in said(found)
