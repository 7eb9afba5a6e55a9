"""A source build without flash-attention's submodules, and FlashAttention-3's modules missing:
each names the fix (the submodule, the hopper/ build)."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


@pytest.mark.parametrize(("line", "folder"), [
    ("csrc/flash_attn/src/flash.h:9:10: fatal error: cute/tensor.hpp: No such file or directory",
     "csrc/cutlass"),
    ("C:\\src\\flash-attention\\csrc\\flash_attn\\flash_api.cpp(8): fatal error C1083: Cannot "
     "open include file: 'cutlass/numeric_types.h': No such file or directory", "csrc/cutlass"),
    ("csrc/flash_attn_ck/mha_fwd.cpp:5:10: fatal error: 'ck_tile/core.hpp' file not found",
     "csrc/composable_kernel"),
])
def test_a_missing_submodule_header_names_the_submodule(matrix: Matrix, line: str,
                                                        folder: str) -> None:
    top = triage(line + "\nninja: build stopped: subcommand failed.\n", matrix).diagnosis[0]
    assert top.category == Category.BUILD_TOOLCHAIN
    assert any(f"git submodule update --init --recursive {folder}" in c
               for r in top.remedies for c in r.commands)


def test_fa3_modules_missing_is_fa3_not_installed(matrix: Matrix) -> None:
    text = ("GPU 0: NVIDIA H100 80GB HBM3\n    from flash_attn_interface import flash_attn_func\n"
            "ModuleNotFoundError: No module named 'flash_attn_interface'\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED
    assert "FlashAttention-3" in top.message
    assert any("flash-attention/hopper" in c for r in top.remedies for c in r.commands)


def test_fa3_missing_on_blackwell_points_elsewhere_first(matrix: Matrix) -> None:
    text = "GPU: NVIDIA GeForce RTX 5090\nModuleNotFoundError: No module named 'flash_attn_3'\n"
    top = triage(text, matrix).diagnosis[0]
    assert "flash-attn>=2.8.0" in top.remedies[0].commands[0]
