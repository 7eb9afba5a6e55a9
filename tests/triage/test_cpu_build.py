"""A CUDA extension built where torch saw no GPU: its setup.py compiled the CPU-only form (PyG's
packages report CUDA version 0.0), rebuilt with FORCE_CUDA=1; a non-zero CUDA that differs from
torch's is a build for another CUDA."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

_PYG = ("RuntimeError: Detected that PyTorch and torch_sparse were compiled with different CUDA "
        "versions. PyTorch has CUDA version 10.1 and torch_sparse has CUDA version {}. Please "
        "reinstall the torch_sparse that matches your PyTorch install.\n")


def test_cuda_version_zero_is_a_build_without_cuda(matrix: Matrix) -> None:
    found = top(_PYG.format("0.0"), matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "without CUDA" in found.message
    assert "FORCE_CUDA=1" in said(found) and "torch-sparse" in said(found)


def test_another_cuda_is_a_build_for_it(matrix: Matrix) -> None:
    found = top(_PYG.format("10.2"), matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and "CUDA 10.2" in found.message


def test_mmcv_ops_without_gpu_support(matrix: Matrix) -> None:
    found = top("mmcv-full 1.3.0\nRuntimeError: nms is not compiled with GPU support\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "mmcv-full" in said(found)


def test_only_pygs_own_packages_are_named_in_the_rebuild(matrix: Matrix) -> None:
    text = _PYG.format("0.0").replace("torch_sparse", "evil_pkg")
    assert all(d.subject != "cpu_build" for d in triage(text, matrix).diagnosis)


def test_no_gpu_support_without_mmcv_names_no_package(matrix: Matrix) -> None:
    text = "RuntimeError: op is not compiled with GPU support\n"
    assert all(d.subject != "cpu_build" for d in triage(text, matrix).diagnosis)
