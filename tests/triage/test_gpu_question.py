"""A question about a flash-attention generation on a GPU, answered from the matrix: FA2's wheel
archs by release, FA3's builds, and each flash-attn-4 beta's forward and backward arch asserts."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_fa2_on_a_blackwell_card_names_the_first_release_with_its_kernels(matrix: Matrix) -> None:
    first = next(rel.version for rel in matrix.flash_attn_releases if "sm_120" in rel.archs)
    found = top("Will flash-attn work on an RTX 5080?\n", matrix)
    assert found.category == Category.INFO and f"flash-attn>={first}" in said(found)


def test_fa3_on_ampere_runs_its_sm80_kernels(matrix: Matrix) -> None:
    found = top("Is FlashAttention-3 supported on the A6000?\n", matrix)
    assert found.category == Category.INFO and "sm_80 kernels" in found.message


def test_fa4_training_on_ampere_is_inference_only(matrix: Matrix) -> None:
    newest = max(b.version for b in matrix.fa4_releases if b.published)
    found = top("Can I train with flash-attn-4 on an A100?\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "inference only" in found.message
    assert f"flash-attn-4=={newest}" in said(found)


def test_an_error_is_not_answered_as_a_question(matrix: Matrix) -> None:
    result = triage("Does flash-attn work on an RTX 5090?\nRuntimeError: CUDA error: no kernel "
                    "image is available for execution on the device\n", matrix)
    assert all(d.message.find("has kernels for it from") < 0 for d in result.diagnosis)


def test_flash_attn_on_windows_asked(matrix: Matrix) -> None:
    found = top("Does flash-attn support Windows 11?\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "WSL2" in said(found)


def test_xformers_on_a_mac_asked(matrix: Matrix) -> None:
    found = top("How do I install xformers on my mac?\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
