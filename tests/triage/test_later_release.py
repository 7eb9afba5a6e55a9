"""A GPU gate of flash-attn or flash-attn-4 failing on a GPU a later release supports: the top
finding's remedy names that release (the matrix's wheel archs, the betas' accepted majors)."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def _commands(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in r.commands)


def test_blackwell_on_a_flash_attn_before_its_kernels(matrix: Matrix) -> None:
    text = ("GPU 0: NVIDIA B200\nflash-attn 2.7.3\n"
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "flash-attn>=2.8.0" in _commands(top)


def test_an_fa4_beta_before_the_first_that_accepts_the_gpu(matrix: Matrix) -> None:
    betas = sorted((b for b in matrix.fa4_releases if b.published), key=lambda b: b.version)
    first = next(b for b in betas if 12 in b.forward_cc_majors)
    older = next(b for b in betas if b.version < first.version)
    text = (f"GPU: NVIDIA GeForce RTX 5090\nflash-attn-4 {older.version}\n"
            "AssertionError: Only SM 10.x and 11.x are supported\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert f"flash-attn-4>={first.version}" in _commands(top)
    # a beta that already accepts the GPU gets no upgrade to itself
    text = text.replace(str(older.version), str(first.version))
    assert f"flash-attn-4>={first.version}" not in _commands(triage(text, matrix).diagnosis[0])
