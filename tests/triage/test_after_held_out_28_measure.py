"""What held_out_28's measure showed, fixed after it (labelled in docs/triage-catalog.md, not
counted as held-out results), each on a text written for the test: Docker without the NVIDIA
runtime, TensorRT refusing FP8 on a GPU without FP8 tensor cores."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category


def test_docker_without_the_nvidia_runtime(matrix: Matrix) -> None:
    found = top('docker: Error response from daemon: could not select device driver "" with '
                "capabilities: [[gpu]].\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "nvidia-ctk" in said(found)


def test_tensorrt_fp8_on_an_ampere_gpu(matrix: Matrix) -> None:
    found = top("GPU: NVIDIA A10\n[TRT] [E] 9: Internal Error (Networks with FP8 precision require "
                "hardware with FP8 support.)\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "int8" in said(found)
    assert "sm_86" in found.message
