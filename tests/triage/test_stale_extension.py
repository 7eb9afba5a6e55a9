"""A package's Python code and its compiled extension from different releases (the op returns
another number of values than the code unpacks), and a pre-Ampere GPU whose flash-attn binary is
broken: uninstalling it is the fix, since no flash-attn 2 kernel runs there."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding
from fadoctor.triage.diagnose import triage


def _said(finding: Finding) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in finding.remedies)


# each written for this test, in the shape of the tracebacks these print
def test_a_stale_flash_attn_extension(matrix: Matrix) -> None:
    text = ('  File "/opt/venv/lib/python3.9/site-packages/flash_attn/flash_attn_interface.py", '
            "line 52, in _flash_attn_varlen_forward\n"
            "    out, q, k, v, out_padded, softmax_lse, S_dmask, rng_state = "
            "flash_attn_cuda.varlen_fwd(\nValueError: not enough values to unpack (expected 8, "
            "got 7)\n")
    found = triage(text, matrix).diagnosis
    assert found[0].category == Category.VERSION_CONFLICT
    assert "uninstall -y flash-attn" in _said(found[0])
    assert all("FlashAttention-3" not in d.message for d in found)  # flash-attn 2's module


def test_xformers_wrapper_against_its_bundled_flash_attention(matrix: Matrix) -> None:
    text = ('site-packages\\xformers\\ops\\fmha\\flash.py", line 139, in _flash_fwd\n'
            "    out, softmax_lse, p, rng_state = _C_flashattention.fwd(\n"
            "ValueError: too many values to unpack (expected 4)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT and "install --upgrade xformers" in _said(top)


def test_a_broken_binary_on_a_pascal_gpu_is_uninstalled(matrix: Matrix) -> None:
    text = ("Tesla P40\nImportError: /x/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-"
            "gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    assert top.remedies[0].commands[-1].endswith("pip uninstall -y flash-attn")
