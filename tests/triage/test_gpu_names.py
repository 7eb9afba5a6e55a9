"""GPUs named the ways people write them: a GeForce model by its number alone ("my 5090"), Turing
GeForce by series, DGX Spark for GB10; a number that is no GPU (a traceback's line, a memory
figure, a port) names none; and triage joins such a name with an arch gate."""

from __future__ import annotations

from typing import List, Optional, Tuple

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.gpus import GpuFinder


@pytest.mark.parametrize(("line", "expected"), [
    ("I have a 5090 and it fails", ("GeForce RTX 5090", "12.0")),
    ("node with 8x5090", ("GeForce RTX 5090", "12.0")),
    ("2x 4090 GPUs", ("GeForce RTX 4090", "8.9")),
    ("same on my 3090 Ti", ("GeForce RTX 3090", "8.6")),
    ("on a 2080 Ti", ("GeForce RTX 2080 Ti", "7.5")),
    ("GPU: NVIDIA GeForce RTX 2080", ("GeForce RTX 2080", "7.5")),
    ("GeForce GTX 1660 Ti", ("GeForce GTX 1660 Ti", "7.5")),
    ("NVIDIA TITAN RTX", ("TITAN RTX", "7.5")),
    ("running on a DGX Spark", ("GB10", "12.1")),
    ("NVIDIA GB10", ("GB10", "12.1")),
    ("does it support the 4090?", ("GeForce RTX 4090", "8.9")),
    ("we train on an A6000", ("RTX A6000", "8.6")),
    ("flashed JetPack 6 on the Orin Nano", ("Jetson Orin Nano", "8.7")),
    ("AGX Orin 64GB", ("Jetson AGX Orin", "8.7")),
    ("RTX PRO 6000 Max-Q", ("RTX PRO 6000 Blackwell", "12.0")),
])
def test_names_people_write(line: str, expected: Tuple[str, str], matrix: Matrix) -> None:
    assert GpuFinder(matrix).names(line) == [expected]


@pytest.mark.parametrize("line", [
    '  File "model.py", line 3090, in forward',
    "|  0  N/A  N/A  1234  C  python  4090MiB |",
    "listening on port 5090",
    "torch==2.5.0 build 4090",
    "sha x5090",
])
def test_a_number_that_names_no_gpu(line: str, matrix: Matrix) -> None:
    found: List[Tuple[str, Optional[str]]] = GpuFinder(matrix).names(line)
    assert found == []


def test_a_bare_model_number_joins_the_arch_gate(matrix: Matrix) -> None:
    # written for this test: FA2's arch gate, the GPU named only as "my 2080 Ti"
    text = ("Trying to train on my 2080 Ti\nRuntimeError: FlashAttention only supports Ampere GPUs "
            "or newer.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "2080 Ti" in top.message and "7.5" in top.message


def test_a_hip_build_for_a_gfx_arch_outside_the_ck_list_is_rocm(matrix: Matrix) -> None:
    # written for this test: a composable_kernel build for an RDNA3 card, clang's closing line
    text = ("Building wheel for flash-attn (setup.py)\n"
            "csrc/composable_kernel/include/ck_tile/core/arch/arch.hpp:12:1: error: static "
            "assertion failed\n1 error generated when compiling for gfx1100.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.ROCM
    assert "gfx1100" in top.message and "gfx942" in top.message
    said = " ".join(r.summary + " ".join(r.commands) for r in top.remedies).lower()
    assert "sdpa" in said and "triton" in said


def test_a_hip_build_error_on_a_listed_arch_is_not_blamed_on_the_arch(matrix: Matrix) -> None:
    text = ("Building wheel for flash-attn (setup.py)\nerror: no member named 'x' in 'y'\n"
            "1 error generated when compiling for gfx942.\n")
    assert all(d.category != Category.ROCM for d in triage(text, matrix).diagnosis)
