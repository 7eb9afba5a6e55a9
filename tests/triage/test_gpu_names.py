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
