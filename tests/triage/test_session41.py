"""Generic mechanisms widened in session 41, each from a class of misses in the older report sets:
a person saying in their own words (English or Chinese) that a pre-Ampere GPU has no bf16."""

from __future__ import annotations

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


@pytest.mark.parametrize("words", [
    "如何使用v100微调模型, v100不支持bfloat16",
    "当前手上只有4张 GTX 1080Ti, 此显卡不支持 bfloat16 数据格式",
    "[Bug] V100 cannot perform full fine-tuning of BF16 models",
])
def test_a_gpu_said_to_lack_bf16_is_run_in_fp16(words: str, matrix: Matrix) -> None:
    found = top(words + "\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "fp16=True" in said(found)


def test_bf16_said_of_an_ampere_gpu_is_not_blamed_on_it(matrix: Matrix) -> None:
    result = triage("A100 不支持bfloat16 ?\n", matrix)
    assert all(d.category != Category.DTYPE_UNSUPPORTED for d in result.diagnosis)


@pytest.mark.parametrize("where", ["local machine(window11)", "on win10 with python 3.10"])
def test_windows_written_short_is_windows(where: str, matrix: Matrix) -> None:
    found = top(f"Facing issue while installing vllm in {where}\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "WSL2" in said(found)


def test_a_context_window_is_not_windows(matrix: Matrix) -> None:
    result = triage("vllm serve fails: context window 11 tokens too small\n", matrix)
    assert all(d.category != Category.PLATFORM_UNSUPPORTED for d in result.diagnosis)


@pytest.mark.parametrize("error", [
    "AssertionError: Flash Attention is not available, but is needed for dense attention",
    "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following "
    "error: the package flash_attn seems to be not installed.",
])
def test_flash_attn_missing_on_a_pre_ampere_gpu_is_the_gpu(error: str, matrix: Matrix) -> None:
    found = top(f"I have V100 graphics cards.\n{error}\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "would not help" in found.message
    assert "sdpa" in said(found) and "uninstall" not in said(found)


def test_flash_attn_missing_on_an_ampere_gpu_is_still_not_installed(matrix: Matrix) -> None:
    found = top("A100 80GB\nImportError: FlashAttention2 has been toggled on, but it cannot be "
                "used due to the following error: the package flash_attn seems to be not "
                "installed.\n", matrix)
    assert found.category == Category.NOT_INSTALLED


def test_a_cuda_11_isa_the_ptxas_lacks_names_the_toolkit_that_knows_it(matrix: Matrix) -> None:
    found = top("triton 1.1.2, V100\nptxas /tmp/triton_k_90kFja, line 5; fatal   : Unsupported "
                ".version 7.3; current version is '7.2'\nRuntimeError: CUDA: Error- invalid "
                "image\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "CUDA 11.3" in said(found)
    assert "(CUDA 11.2's)" in found.message


def test_a_cuda_12_isa_under_triton_is_still_its_ptx_table(matrix: Matrix) -> None:
    found = top("triton 3.1.0\nptxas fatal   : Unsupported .version 8.6; current version is "
                "'8.5'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "Upgrade Triton" in said(found)


def test_another_packages_wheel_for_another_python_names_this_pythons_tag(matrix: Matrix) -> None:
    found = top("ComfyUI portable\nPython 3.13\nERROR: cumesh-0.0.1-cp311-cp311-win_amd64.whl is "
                "not a supported wheel on this platform.\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "cp313, Python 3.13's" in said(found)


def test_tritons_own_library_missing_a_symbol_upgrades_triton(matrix: Matrix) -> None:
    found = top("pip install triton==0.2.3\nImportError: triton/_C/libtriton.so: undefined "
                "symbol: compress2\n", matrix)
    assert "flash-attn" not in said(found) and "upgrade triton" in said(found)
    assert "pip install --force-reinstall --no-cache-dir triton" in said(found)
