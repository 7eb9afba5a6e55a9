"""A build told to compile for architectures none of which runs on the GPU the report names:
SASS runs on its own major at its minor or above, an 'a' target only on its own GPU, PTX on any
newer GPU."""

from __future__ import annotations

import pytest
from packaging.version import Version

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_arch_list import runs_on


@pytest.mark.parametrize("arch, cc, runs", [
    ((8, 0, "", False), "8.6", True), ((8, 6, "", False), "8.0", False),
    ((9, 0, "a", False), "9.0", True), ((9, 0, "a", False), "12.0", False),
    ((9, 0, "", True), "12.0", True), ((12, 0, "", False), "12.1", True),
    ((10, 0, "", False), "12.0", False),
])
def test_which_build_runs_where(arch: tuple, cc: str, runs: bool) -> None:  # type: ignore[type-arg]
    assert runs_on(arch, Version(cc)) is runs


# each written for this test
def test_an_arch_list_without_this_gpu(matrix: Matrix) -> None:
    text = ('GPU: NVIDIA GeForce RTX 5090\nTORCH_CUDA_ARCH_LIST="8.0;9.0" MAX_JOBS=4 pip install '
            "flash-attn --no-build-isolation\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NO_KERNEL_IMAGE
    assert "export TORCH_CUDA_ARCH_LIST=12.0" in top.remedies[0].commands


def test_a_cmake_arch_for_another_gpu(matrix: Matrix) -> None:
    text = "I have an RTX 5080.\ncmake .. -DCUTLASS_NVCC_ARCHS=90a\nAll of the gemm tests fail.\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NO_KERNEL_IMAGE
    assert "cmake .. -DCUTLASS_NVCC_ARCHS=120" in top.remedies[0].commands


@pytest.mark.parametrize("setting", ['TORCH_CUDA_ARCH_LIST="8.0 9.0"', "TORCH_CUDA_ARCH_LIST=9.0+PTX",
                                     "FLASH_ATTN_CUDA_ARCHS=90"])
def test_an_arch_list_that_runs_here_is_not_this(setting: str, matrix: Matrix) -> None:
    text = f"GPU: NVIDIA H100 80GB HBM3\n{setting} pip install flash-attn\n"
    assert all(d.category != Category.NO_KERNEL_IMAGE for d in triage(text, matrix).diagnosis)


def test_tcgen05_code_on_a_gb10_cannot_run(matrix: Matrix) -> None:
    # written for this test, in the words of the CuTe DSL's arch check
    text = ("GPU: NVIDIA GB10\ncutlass.cute.nvgpu.tcgen05.mma.MmaF16BF16Op rejects Arch.sm_121a\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "tcgen05" in top.message


def test_tcgen05_on_a_b200_is_not_this(matrix: Matrix) -> None:
    text = "GPU: NVIDIA B200\ntcgen05.mma failed with an illegal instruction\n"
    assert all("tcgen05" not in d.message for d in triage(text, matrix).diagnosis)


def test_a_binary_built_for_other_archs_says_so(matrix: Matrix) -> None:
    text = 'FATAL: kernel built for sm80-sm100, but running on sm121\n'
    assert triage(text, matrix).diagnosis[0].category == Category.NO_KERNEL_IMAGE


def test_a_framework_refusing_the_capability(matrix: Matrix) -> None:
    top = triage("GPU with CUDA capability 7 0 is not supported\n", matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "7.0" in top.message
