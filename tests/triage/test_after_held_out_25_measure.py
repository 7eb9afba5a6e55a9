"""Mechanisms added after held_out_25's held-out half was measured (labelled: its figure before
them is the one reported), each on a text written for the test."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_ctranslate2_built_for_cuda_11(matrix: Matrix) -> None:
    found = top("faster-whisper on CUDA 12.4\nRuntimeError: Library libcublas.so.11 is not found or "
                "cannot be loaded\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "before 4.0" in said(found)


def test_ctranslate2_wanting_cudnn_8(matrix: Matrix) -> None:
    found = top("from faster_whisper import WhisperModel\nCould not load library "
                "libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared "
                "object file: No such file or directory\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH  # cuDNN's own line: mech_cudnn_lib
    assert "cuDNN 8" in found.message and "CTranslate2 cannot load" not in found.message


def test_cudnn_9_under_whisper_offers_the_cudnn_8_release(matrix: Matrix) -> None:
    found = top("whisperx transcribe\nUnable to load any of {libcudnn_ops.so.9.1.0, "
                "libcudnn_ops.so.9}\n", matrix)
    assert 'ctranslate2==4.4.0' in " ".join(c for r in found.remedies for c in r.commands)


def test_an_optional_accelerator_warning_is_info(matrix: Matrix) -> None:
    found = top("node.py:26: UserWarning: Onnxruntime not found or doesn't come with acceleration "
                "providers, switch to OpenCV with CPU device (super slow)\n", matrix)
    assert found.category == Category.INFO


def test_the_warning_beside_a_real_error_is_not_the_answer(matrix: Matrix) -> None:
    result = triage("UserWarning: Onnxruntime not found, switch to OpenCV with CPU device\n"
                    "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                    "ImportError: libcudart.so.11.0: cannot open shared object file: No such file "
                    "or directory\n", matrix)
    assert result.diagnosis[0].category != Category.INFO
