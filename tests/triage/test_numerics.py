"""A report of NaN/Inf from a run with flash-attention is a numerics finding (the weakest): the
remedies tell the kernel from the model; an error in the report outranks it."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_nan_loss_with_flash_attention_2(matrix: Matrix) -> None:
    text = ("Training Qwen2 with attn_implementation=\"flash_attention_2\" in fp16: after 300 steps "
            "the loss becomes nan. With sdpa it trains fine.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NUMERICS
    said = " ".join(r.summary for r in top.remedies)
    assert "sdpa" in said.lower() and "bfloat16" in said


def test_nan_without_flash_attention_is_not_read(matrix: Matrix) -> None:
    text = "The loss becomes nan after 300 steps with the eager attention.\n"
    assert all(d.category != Category.NUMERICS for d in triage(text, matrix).diagnosis)


def test_an_error_outranks_the_nan(matrix: Matrix) -> None:
    text = ("flash-attn 2.8.3, loss is nan on rank 1\n"
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n")
    assert triage(text, matrix).diagnosis[0].category != Category.NUMERICS
