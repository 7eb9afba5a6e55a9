"""SageAttention's own checks, read from its main branch's history (tools/wrapper_sources.py):
each printed form is in the catalog with its commit range, a head-dim assert gets the release
that pads head dims, and the hand-written SageAttention findings keep precedence where they read
the same line."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.catalog_data import entries


def _sage() -> dict:
    return {e.printed: e for e in entries() if e.source.startswith("sage-")}


def test_the_catalog_holds_sageattentions_checks() -> None:
    printed = _sage()
    assert "sageattn_qk_int8_pv_fp16_cuda only support head_dim [64, 128]." in printed
    assert "Unsupported CUDA architecture: {arch}" in printed
    assert any(p.startswith("SM89 kernel is not available") for p in printed)
    assert all(e.location.startswith("thu-ml/SageAttention@") and e.remedy
               for e in printed.values())


def test_an_old_head_dim_assert_gets_the_padding_release(matrix: Matrix) -> None:
    found = top('    assert head_dim in [64, 128], "sageattn_qk_int8_pv_fp16_cuda only support '
                'head_dim [64, 128]."\n', matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED and "2.1.0" in said(found)


def test_a_missing_kernel_module_is_a_build_for_other_archs(matrix: Matrix) -> None:
    found = top("GPU: NVIDIA GeForce RTX 4070\nAssertionError: SM89 kernel is not available. Make "
                "sure you GPUs with compute capability 8.9.\n", matrix)
    assert found.category in (Category.NO_KERNEL_IMAGE, Category.GPU_UNSUPPORTED)
    assert "reinstall" in said(found).lower() or "rebuild" in said(found).lower()


def test_the_hand_written_head_dim_finding_keeps_its_reading(matrix: Matrix) -> None:
    found = top("ValueError: Unsupported head_dim: 512\n", matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED and "head_dim is 512" in found.message
