"""FlashAttention-3's return value changed (the pair, then the tensor alone, then the pair on
request): a caller written for the other form is a version conflict, and the remedy says which
form the installed build returns and how to get the other."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding
from fadoctor.triage.diagnose import triage


def _said(finding: Finding) -> str:
    return " ".join(c for r in finding.remedies for c in [r.summary, *r.commands])


# each written for this test, in the shape of a video model's FA3 call
INDEXED = ("  File \"wan/modules/attention.py\", line 120, in flash_attention\n"
           "    x = flash_attn_interface.flash_attn_varlen_func(q, k, v)[0].unflatten(0, (b, lq))\n"
           "RuntimeError: unflatten: Provided sizes [1, 73920] don't multiply up to the size of "
           "dim 0 (5) in the input tensor\n")


def test_taking_0_of_the_tensor_alone_asks_for_return_attn_probs(matrix: Matrix) -> None:
    top = triage(INDEXED, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "return_attn_probs=True" in _said(top) and "203b9b3d" in _said(top)


def test_unpacking_a_pair_into_one_name_names_the_older_build(matrix: Matrix) -> None:
    text = ("    x = flash_attn_interface.flash_attn_func(q, k, v)\n"
            "ValueError: too many values to unpack (expected 1)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "out, _ = flash_attn_func" in _said(top) and "hopper" in _said(top)


def test_unpacking_the_tensor_into_two_names(matrix: Matrix) -> None:
    text = ("    out, lse = flash_attn_3.flash_attn_func(q, k, v, causal=True)\n"
            "ValueError: not enough values to unpack (expected 2, got 1)\n")
    assert "return_attn_probs=True" in _said(triage(text, matrix).diagnosis[0])


def test_the_same_errors_without_fa3_are_not_this(matrix: Matrix) -> None:
    text = ("    out = model(x)[0].unflatten(0, (b, lq))\n"
            "RuntimeError: unflatten: Provided sizes [1, 7] don't multiply up to the size of "
            "dim 0 (5) in the input tensor\n")
    assert all(d.category != Category.VERSION_CONFLICT for d in triage(text, matrix).diagnosis)
