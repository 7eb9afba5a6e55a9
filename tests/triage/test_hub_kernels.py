"""The `kernels` package found no build of a Hub kernel: the rejection that rejects the most
variants is the cause (kernels' variants.py wording; the texts are written for these tests)."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in [r.summary, *r.commands, r.code or ""])


def test_no_build_for_this_torch(matrix: Matrix) -> None:
    text = ("Cannot find a build variant for this system in kernels-community/flash-attn3 "
            "(revision: main):\n\n"
            "torch211-cxx11-cu128-x86_64-linux: Torch version (2.11) does not match environment "
            "Torch version (2.13)\n"
            "torch212-cxx11-cu128-x86_64-linux: Torch version (2.12) does not match environment "
            "Torch version (2.13)\n"
            "torch212-cxx11-cu128-aarch64-linux: CPU (aarch64) does not match system CPU "
            "(x86_64)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    assert "torch 2.11, 2.12" in top.message
    said = _said(top)
    assert "stable ABI" in said and "torch==2.12.*" in said


def test_no_build_for_this_cuda(matrix: Matrix) -> None:
    text = ("Cannot find a build variant for this system in kernels-community/flash-attn2\n"
            "torch210-cxx11-cu130-x86_64-linux: CUDA version (13.0) is not compatible with system "
            "CUDA version (12.8)\n"
            "torch210-cxx11-cu129-x86_64-linux: CUDA version (12.9) is not compatible with system "
            "CUDA version (12.8)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.CUDA_RUNTIME_MISMATCH
    assert "12.9, 13.0" in top.message
