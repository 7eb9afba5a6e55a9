"""What held_out_27's measure showed, fixed after it (labelled in docs/triage-catalog.md, not
counted as held-out results), each on a text written for the test: green images in half
precision, a system cuDNN mixed with torch's (not a missing one), a Triton API removal whose
caller's stack a server prints below the message while torch pins the installed Triton."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category


def test_green_images_asking_for_full_precision(matrix: Matrix) -> None:
    found = top("My GTX 1650 gives green images, can I run it in full precision?\n", matrix)
    assert found.category == Category.NUMERICS and "--no-half" in said(found)


def test_a_system_cudnn_with_a_missing_symbol_is_not_a_missing_cudnn(matrix: Matrix) -> None:
    found = top("Could not load library libcudnn_ops_train.so.8. Error: /usr/lib/x86_64-linux-gnu/"
                "libcudnn_ops_train.so.8: undefined symbol: _ZN5cudnn3ops9someThingEv\n", matrix)
    assert "LD_LIBRARY_PATH" in said(found)
    assert "finds no cuDNN" not in found.message


def test_a_caller_below_the_message_and_torchs_pinned_triton(matrix: Matrix) -> None:
    found = top("torch=2.9.0+cu128\ntriton=3.5.0\nInternal: AttributeError: module "
                "'triton.language' has no attribute 'constexpr_function'\nAt:\n"
                "  /usr/lib/python3.12/site-packages/mykernels/ops.py(12): <module>\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert found.remedies[0].summary.startswith("Upgrade mykernels")


def test_invalid_configuration_argument_names_the_grid_limit(matrix: Matrix) -> None:
    found = top("q = torch.rand([70000, 8, 4, 64])\nRuntimeError: CUDA error: invalid configuration "
                "argument\n", matrix)
    assert found.category == Category.KERNEL_FAILURE and "65535" in said(found)
    xformers = top("xformers memory_efficient_attention\nRuntimeError: CUDA error: invalid "
                   "configuration argument\n", matrix)
    assert "Turn xformers off" in said(xformers)
