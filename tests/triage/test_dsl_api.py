"""flash-attn-4 against an nvidia-cutlass-dsl it was not written for: an API error where FA4's
CuTe code calls the DSL names the DSL pin the stated beta declares (the matrix's fa4_releases)."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

# written for this test, in the shape of a CuTe DSL compile error inside flash_attn/cute
FRAMES = ('  File "/venv/lib/python3.12/site-packages/flash_attn/cute/softmax.py", line 120, in '
          "online_softmax\n    row_max = utils.fmax(a, b)\n")


def _commands(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in r.commands)


def test_a_stated_beta_gets_the_dsl_it_declares(matrix: Matrix) -> None:
    beta = sorted(matrix.fa4_releases, key=lambda r: r.version)[-1]
    spec = next(d for d in beta.dependencies if d.startswith("nvidia-cutlass-dsl"))
    text = (f"flash-attn-4=={beta.version}\nnvidia-cutlass-dsl==4.1.0\n" + FRAMES +
            "TypeError: fmax() takes 2 positional arguments but 3 were given\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert spec in _commands(top)
    assert "older than that pin" in " ".join(r.summary for r in top.remedies)


def test_without_versions_both_are_upgraded_together(matrix: Matrix) -> None:
    text = FRAMES + "AttributeError: module 'cutlass.cute.nvgpu' has no attribute 'warpgroup'\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "flash-attn-4==" in _commands(top) and "nvidia-cutlass-dsl" in _commands(top)


def test_a_type_error_far_from_the_dsl_is_not_read_as_one(matrix: Matrix) -> None:
    text = ("model.py line 3\nTypeError: forward() takes 2 positional arguments but 3 were given\n")
    assert all("nvidia-cutlass-dsl" not in d.message for d in triage(text, matrix).diagnosis)


def test_an_error_inside_flash_attn_4s_cute_code_points_to_the_newest_beta(
        matrix: Matrix) -> None:
    # written for this test: a traceback through flash_attn/cute with no message naming a cause
    text = ("flash-attn-4 4.0.0b8\nGPU: NVIDIA GeForce RTX 5060 Ti\n"
            "Traceback (most recent call last):\n"
            '  File "/venv/lib/python3.12/site-packages/flash_attn/cute/flash_fwd.py", line 900, '
            "in __call__\n"
            "AttributeError: 'NoneType' object has no attribute '_trait'\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.KERNEL_FAILURE
    newest = max((r for r in matrix.fa4_releases if r.published), key=lambda r: r.version)
    said = " ".join(c for r in top.remedies for c in [r.summary, *r.commands])
    assert f"=={newest.version}" in said and "sdpa" in said


def test_a_named_cause_outranks_the_beta(matrix: Matrix) -> None:
    text = ("flash-attn-4 4.0.0b8\nTraceback (most recent call last):\n"
            '  File "/venv/lib/python3.12/site-packages/flash_attn/cute/interface.py", line 1, '
            "in <module>\n"
            "ImportError: libcudart.so.13: cannot open shared object file: No such file or "
            "directory\n")
    assert triage(text, matrix).diagnosis[0].category != Category.KERNEL_FAILURE
