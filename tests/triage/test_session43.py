"""Generic mechanisms and facts added in session 43: the lock file an interrupted JIT build
leaves, and GPUs written by names NVIDIA's compute-capability page does not list."""

from __future__ import annotations

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category

_LOADER = ("Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
           "Emitting ninja build file /root/.cache/torch_extensions/py310_cu121/cpu_adam/"
           "build.ninja...\nLoading extension module cpu_adam...\n")


def test_a_hang_at_the_loader_names_its_lock_file(matrix: Matrix) -> None:
    found = top(_LOADER + "the training is stuck here forever, nothing happens\n", matrix)
    assert found.category == Category.BUILD_RESOURCES and "lock" in found.message
    assert "rm -f /root/.cache/torch_extensions/py310_cu121/cpu_adam/lock" in said(found)


def test_a_hang_told_in_prose_finds_the_root_through_torch(matrix: Matrix) -> None:
    found = top("The program gets stuck at compiling fused_kernels; deleting the build directory "
                "fixes it.\n", matrix)
    assert found.category == Category.BUILD_RESOURCES
    assert "get_default_build_root()" in said(found) and "fused_kernels/build" in said(found)


def test_the_loader_alone_is_no_hang(matrix: Matrix) -> None:
    found = top(_LOADER + "RuntimeError: CUDA error: no kernel image is available for execution "
                "on the device\n", matrix)
    assert "lock" not in found.message


@pytest.mark.parametrize("device, cc", [
    ("NVIDIA H800", "9.0"), ("NVIDIA H20", "9.0"), ("NVIDIA A800-SXM4-80GB", "8.0"),
    ("NVIDIA L20", "8.9"), ("NVIDIA A10G", "8.6"), ("NVIDIA GeForce RTX 2050", "8.6"),
    ("Jetson Xavier NX", "7.2"),
])
def test_gpus_off_nvidias_page_give_their_capability(device: str, cc: str,
                                                     matrix: Matrix) -> None:
    found = top(f"GPU: {device}\nRuntimeError: FlashAttention only supports Ampere GPUs or "
                "newer.\n", matrix)
    assert cc in said(found) or cc in found.message
