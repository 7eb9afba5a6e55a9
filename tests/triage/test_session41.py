"""Generic mechanisms widened in session 41, each from a class of misses in the older report sets:
a person saying in their own words (English or Chinese) that a pre-Ampere GPU has no bf16."""

from __future__ import annotations

import pytest
from packaging.version import Version
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.ext_torch import releases_for, table


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


def test_apex_optimizers_without_cuda_extensions_rebuild_apex(matrix: Matrix) -> None:
    found = top("RuntimeError: apex.optimizers.FusedAdam requires cuda extensions\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "APEX_CUDA_EXT=1" in said(found)
    assert "amp_C" in found.message


def test_torchs_found_version_names_the_cuda_the_driver_runs(matrix: Matrix) -> None:
    found = top("UserWarning: CUDA initialization: The NVIDIA driver on your system is too old "
                "(found version 12080). Please update your GPU driver\n", matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "CUDA 12.8 at most" in found.message
    assert "Or keep the driver: Install torch" in said(found) and "cuda-compat" in said(found)
    assert "+cu13" not in said(found)


def test_xformers_releases_with_only_older_pythons_wheels_are_in_the_table() -> None:
    # 0.0.17-0.0.19 published cp38-cp310 wheels only; a listing for Python 3.11 missed them
    found = [str(v) for v, _ in releases_for("xformers", Version("2.0.0"))]
    assert found == ["0.0.17", "0.0.18", "0.0.19"]


@pytest.mark.parametrize("torch", ["2.7.1", "1.13.0"])
def test_a_release_stating_only_a_floor_is_not_for_a_later_torch(torch: str) -> None:
    # xformers 0.0.13 states torch>=1.12: built against 1.12, not for 1.13 or 2.7
    assert "0.0.13" not in [str(v) for v, _ in releases_for("xformers", Version(torch))]


def test_the_newest_release_stating_a_floor_is_for_every_later_torch() -> None:
    newest = max(Version(v) for v in table()["xformers"])
    assert table()["xformers"][str(newest)].startswith(">=")  # 0.0.35: torch>=2.10
    assert [v for v, _ in releases_for("xformers", Version("2.99.0"))] == [newest]


def test_a_kernels_capability_condition_against_the_named_gpu(matrix: Matrix) -> None:
    found = top("Running on RTX 4090\nRuntimeError: Expected (dprops->major == 8 && dprops->minor "
                "== 0) || (dprops->major == 9 && dprops->minor == 0) to be true, but got false.\n",
                matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "sm_80, sm_90" in found.message
    assert "sm_89" in found.message  # sm_80 is listed and older: a later release may add sm_89
    assert "a release of the package whose check includes this GPU" in said(found)


def test_a_capability_condition_the_named_gpu_meets_is_not_its(matrix: Matrix) -> None:
    result = triage("A100 80GB\nRuntimeError: Expected dprops->major >= 8 to be true, but got "
                    "false.\n", matrix)
    assert all("kernel's own check" not in d.message for d in result.diagnosis)


def test_a_gtx_16_card_with_green_images_runs_in_full_precision(matrix: Matrix) -> None:
    found = top("GPU: 1660 Super 6GB\nOutput is a green image\n", matrix)
    assert found.category == Category.NUMERICS and "--no-half" in said(found)


def test_green_images_on_an_rtx_card_are_not_the_gtx_16_defect(matrix: Matrix) -> None:
    result = triage("GPU: RTX 3060\nOutput is a green image\n", matrix)
    assert all("GTX 16 card" not in d.message for d in result.diagnosis)


def test_mask_rows_with_all_false_values_are_fully_masked_rows(matrix: Matrix) -> None:
    found = top("SDPA produces NaN with padding mask\nI add extra rows to the boolean attention "
                "mask with all `False` values. scaled_dot_product_attention returns NaNs.\n",
                matrix)
    assert found.category == Category.NUMERICS and "fully masked" in said(found)


def test_a_gpu_older_than_every_capability_listed_gets_no_later_release(matrix: Matrix) -> None:
    found = top("GTX 1080\nRuntimeError: Expected (dprops->major == 8 && dprops->minor == 0) || "
                "(dprops->major == 9 && dprops->minor == 0) to be true, but got false.\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "sm_61" in found.message
    assert "whose check includes this GPU" not in said(found)
