"""Generic mechanisms added in session 44, each on the words its source prints: pip's empty
range, a Mac's loader refusing the other architecture, DirectML's float64 refusal, an arch list
naming an arch torch does not know, torchvision's unregistered ops, a PyTorch index variant that
was never published, Accelerate's bf16 refusal on a GPU without bf16, and xformers' Triton
notice."""

from __future__ import annotations

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix, load_matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.environment import read_environment
from fadoctor.triage.gpus import GpuFinder
from fadoctor.triage.observed import Observed
from fadoctor.triage.text import split


def test_no_release_in_the_range_asks_for_an_older_python(matrix: Matrix) -> None:
    found = top("ERROR: Could not find a version that satisfies the requirement cumm<0.5.0,"
                ">=0.4.5 (from spconv) (from versions: 0.1.0, 0.5.0, 0.5.1)\nERROR: No matching "
                "distribution found for cumm<0.5.0,>=0.4.5\n", matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "0.1.0 and 0.5.0" in found.message and "spconv" in found.message
    assert "older Python" in said(found) and "spconv whose requirement allows cumm 0.5.0" in \
        said(found)


def test_a_release_inside_the_range_is_no_gap(matrix: Matrix) -> None:
    result = triage("ERROR: Could not find a version that satisfies the requirement foo<0.5,>=0.4 "
                    "(from versions: 0.1.0, 0.4.2, 0.5.0)\n", matrix)
    assert not any("no release in" in d.message for d in result.diagnosis)


def test_a_pin_newer_than_the_index_lists_keeps_its_reading(matrix: Matrix) -> None:
    found = top("ERROR: Could not find a version that satisfies the requirement torch==2.6.0 "
                "(from versions: 2.0.0, 2.1.0, 2.2.2)\n", matrix)
    assert "up to 2.2.2" in found.message and "torch==2.2.2" in said(found)


@pytest.mark.parametrize("have, need, category, words", [
    ("(have (arm64), need (x86_64h))", "", Category.PLATFORM_UNSUPPORTED, "Apple Silicon (arm64)"),
    ("(have 'arm64', need 'x86_64')", " on my M2 Max", Category.WRONG_WHEEL, "Rosetta"),
    ("(have 'x86_64', need 'arm64e')", "", Category.WRONG_WHEEL, "arm64 build"),
])
def test_a_mach_o_of_the_other_architecture(matrix: Matrix, have: str, need: str,
                                            category: Category, words: str) -> None:
    found = top("OSError: dlopen(/Users/me/env/lib/python3.10/site-packages/torch/lib/"
                "libtorch_global_deps.dylib, 0x000A): tried: '/Users/me/env/lib/python3.10/"
                "site-packages/torch/lib/libtorch_global_deps.dylib' (mach-o file, but is an "
                f"incompatible architecture {have})\n" + (f"I run it{need}\n" if need else ""),
                matrix)
    assert found.category == category and words in found.message + said(found)
    assert "torch" in found.message


def test_directml_without_float64_keeps_float32_and_prints_from_the_cpu(matrix: Matrix) -> None:
    found = top("RuntimeError: The GPU device does not support Double (Float64) operations!\n",
                matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "float32" in said(found) and 'to("cpu")' in said(found)


def test_an_arch_the_list_names_is_removed_from_the_list(matrix: Matrix) -> None:
    found = top("ValueError: Unknown CUDA arch (9.0+PTX) or GPU not supported\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "TORCH_CUDA_ARCH_LIST names" in found.message
    assert "remove 9.0 from TORCH_CUDA_ARCH_LIST" in said(found)


def test_an_arch_the_gpu_brings_still_reads_as_the_gpu(matrix: Matrix) -> None:
    found = top("ValueError: Unknown CUDA arch (12.0) or GPU not supported\n", matrix)
    assert "predates this GPU" in found.message and "remove" not in said(found)


def test_an_unregistered_torchvision_op_is_the_torchvision_torch_pair(matrix: Matrix) -> None:
    found = top('  File "/usr/local/lib/python3.12/dist-packages/torchvision/_meta_registrations'
                '.py", line 163, in <module>\n    @torch.library.register_fake("torchvision::nms")'
                "\nRuntimeError: operator torchvision::nms does not exist\n", matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert "torchvision" in said(found)


def test_an_index_variant_never_published_gets_the_nearest_built_one(matrix: Matrix) -> None:
    found = top("pip install torch==2.10.0 torchvision --index-url https://example.invalid/whl/"
                "cu131\nERROR: Could not find a version that satisfies the requirement "
                "torch==2.10.0 (from versions: none)\n", matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "cu126, cu128, cu130" in found.message
    assert "torch==2.10.0 --index-url" in said(found) and "/whl/cu130" in said(found)


def test_a_published_variant_is_not_blamed(matrix: Matrix) -> None:
    result = triage("pip install torch==2.10.0 --index-url https://example.invalid/whl/cu128\n"
                    "ERROR: Could not find a version that satisfies the requirement torch==2.10.0"
                    " (from versions: none)\n", matrix)
    assert not any("has no cu128 build" in d.message for d in result.diagnosis)


def test_bf16_refused_on_a_gpu_without_it_trains_in_fp16(matrix: Matrix) -> None:
    found = top('mixed_precision = "bf16"\nValueError: bf16 mixed precision requires PyTorch '
                ">= 1.10 and a supported device.\nGPU: Tesla T4\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert 'mixed_precision="fp16"' in said(found)


def test_bf16_refused_on_an_ampere_gpu_is_not_the_gpu(matrix: Matrix) -> None:
    found = top("ValueError: bf16 mixed precision requires PyTorch >= 1.10 and a supported "
                "device.\nGPU: NVIDIA A100-SXM4-80GB\ntorch 1.9.0\n", matrix)
    assert found.category != Category.DTYPE_UNSUPPORTED


def test_xformers_older_triton_notice_is_a_notice(matrix: Matrix) -> None:
    found = top("Error caught was: No module named 'triton'\n", matrix)
    assert found.category == Category.INFO and "ignore" in said(found)


def test_on_windows_named_in_a_field(matrix: Matrix) -> None:
    found = top("开发环境\uff1awindows\nERROR: Could not find a version that satisfies the "
                "requirement triton==2.0.0 (from versions: none)\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "WSL2" in said(found)


def test_mmcv_1x_without_ops_builds_mmcv_full_with_its_ops(matrix: Matrix) -> None:
    found = top("RuntimeError: DeformConv is not compiled with GPU support\nmmcv : 1.7.1\n", matrix)
    assert "MMCV_WITH_OPS=1 FORCE_CUDA=1" in said(found) and "mmcv-full==1.7.1" in said(found)


def test_mmcv_2x_without_ops_needs_no_ops_switch(matrix: Matrix) -> None:
    found = top("RuntimeError: DeformConv is not compiled with GPU support\nmmcv==2.1.0\n", matrix)
    assert "MMCV_WITH_OPS" not in said(found) and "FORCE_CUDA=1" in said(found)


def test_a_cuda_minor_difference_is_an_old_check(matrix: Matrix) -> None:
    found = top("RuntimeError: Detected that PyTorch and torch_scatter were compiled with different"
                " CUDA versions. PyTorch has CUDA version 11.0 and torch_scatter has CUDA version "
                "11.2. Please reinstall the torch_scatter that matches your PyTorch install.\n",
                matrix)
    assert "minor version" in found.message and "upgrade torch-scatter" in said(found)


def test_a_cuda_major_difference_is_still_a_mismatch(matrix: Matrix) -> None:
    found = top("RuntimeError: Detected that PyTorch and torch_scatter were compiled with different"
                " CUDA versions. PyTorch has CUDA version 12.1 and torch_scatter has CUDA version "
                "11.8.\n", matrix)
    assert "must match torch's CUDA" in found.message


def test_remote_code_asking_for_triton_on_windows(matrix: Matrix) -> None:
    found = top("On Windows 11: This model requires the `triton` package, which is only available"
                " on Linux. Therefore, this model cannot be run on this system.\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "triton-windows" in said(found)


def test_a_domain_library_nightly_beside_a_released_torch(matrix: Matrix) -> None:
    found = top("I use torchrec-nightly with torch 1.12.\n>>> import torchrec\nFile "
                "fbgemm_gpu_py.so not found\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "PyTorch nightly" in said(found) and "uninstall -y torchrec-nightly" in said(found)


def test_a_nightly_torch_with_its_nightly_library_is_the_pair(matrix: Matrix) -> None:
    result = triage("torchrec-nightly with torch 2.5.0.dev20240801\nImportError: cannot import "
                    "name 'x'\n", matrix)
    assert not any("built each night" in d.message for d in result.diagnosis)


def test_poetry_skipping_every_torch_wheel_for_a_supported_python(matrix: Matrix) -> None:
    found = top("Installing torch (2.5.1): Failed\n  | Unable to find installation candidates for "
                "torch (2.5.1)\n  |   - 17 wheel(s) were skipped as your project's environment "
                "does not support the identified abi tags\npython version 3.12\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert "poetry add torch==2.2.2" in said(found)


def test_poetry_skipping_every_torch_wheel_for_an_unsupported_python(matrix: Matrix) -> None:
    found = top("Unable to find installation candidates for torch (2.0.1)\n  - 9 wheel(s) were "
                "skipped as your project's environment does not support the identified abi tags\n"
                "Python 3.12.1\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "Python 3.12" in found.message


def test_a_rocm_index_that_ends_before_the_release_asked(matrix: Matrix) -> None:
    found = top("pip install torch==2.3.1 --index-url https://example.invalid/whl/rocm5.6\n"
                "ERROR: Could not find a version that satisfies the requirement torch==2.3.1 "
                "(from versions: 2.2.0+rocm5.6, 2.2.1+rocm5.6, 2.2.2+rocm5.6)\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "later ROCm (rocm6.0)" in found.message
    assert "torch==2.3.1 --index-url" in said(found) and "/whl/rocm6.0" in said(found)


def test_a_rocm_release_fadoctor_does_not_know_is_named_as_unknown(matrix: Matrix) -> None:
    found = top("pip install torch==2.4.1 --index-url https://example.invalid/whl/rocm5.6\n"
                "ERROR: Could not find a version that satisfies the requirement torch==2.4.1 "
                "(from versions: 2.2.0+rocm5.6, 2.2.2+rocm5.6)\n", matrix)
    assert "previous-versions page" in said(found) and "--index-url" not in said(found)


def test_a_mac_run_without_flash_attn_is_judged_by_its_error(matrix: Matrix) -> None:
    found = top("On my MacBook (Apple Silicon) flash-attn does not install. Running the examples "
                "without `flash-attn` runs into:\nImportError: cannot import name "
                "'WhisperFlashAttention2' from 'transformers.models.whisper.modeling_whisper'\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT and "4.52.4" in said(found)


def test_a_mac_install_of_flash_attn_is_still_the_platform(matrix: Matrix) -> None:
    found = top("On my MacBook (Apple Silicon): pip install flash-attn\nModuleNotFoundError: No "
                "module named 'torch'\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED


def test_a_packages_own_cuda_module_never_built(matrix: Matrix) -> None:
    found = top("Whenever openfold/openfold/utils/kernel/attention_core.py runs:\n"
                "ModuleNotFoundError: No module named 'attn_core_inplace_cuda'\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "openfold" in found.message
    assert "pip install . --no-build-isolation -v" in said(found) and "module load cuda" in \
        said(found)


def test_a_prebuilt_extension_that_did_not_load_names_the_torch(matrix: Matrix) -> None:
    found = top("Cannot import custom_nodes\\ComfyUI-ExLlama-Nodes module for custom nodes: name "
                "'exllamav2_ext' is not defined\npytorch version: 2.2.2+cu121\n", matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert "exllamav2 wheel built for torch 2.2.2+cu121" in said(found)


def test_a_checkout_built_against_an_earlier_torch_is_rebuilt_not_flash_attn(
        matrix: Matrix) -> None:
    found = top("python setup.py develop\n    from . import iou3d_nms_cuda\nImportError: "
                "libtorch_cuda_cu.so: cannot open shared object file: No such file or directory\n"
                "I am using Torch 2.3.0 and CUDA 12.1.\n", matrix)
    assert "rm -rf build python setup.py develop" in said(found)
    assert "flash" not in said(found)


@pytest.mark.parametrize("stated, command", [("", "mim install mmcv-full"),
                                             ("mmcv==2.1.0\n", "mim install mmcv")])
def test_mmcv_ext_missing_installs_mmcv_with_its_ops(matrix: Matrix, stated: str,
                                                     command: str) -> None:
    found = top(stated + "ModuleNotFoundError: No module named 'mmcv._ext'\n", matrix)
    assert found.category == Category.NOT_INSTALLED
    assert found.remedies[0].commands[-1] == command


def test_a_gpu_told_by_its_number_after_gpu_is(matrix: Matrix) -> None:
    found = top('nvrtc: error: invalid value for --gpu-architecture (-arch)\nMy GPU is 4090,'
                "nvidia driver is 525.60.11\n", matrix)
    assert "GeForce RTX 4090" in found.message


@pytest.mark.parametrize("line, install", [
    ("AssertionError: MMCV==1.6.0 is used but incompatible. Please install mmcv>=1.3.17, "
     "<=1.5.0.", 'mim install "mmcv-full>=1.3.17,<=1.5.0"'),
    ("AssertionError: MMCV==2.2.0 is used but incompatible. Please install mmcv>=2.0.0rc4, "
     "<2.2.0.", 'mim install "mmcv>=2.0.0rc4,<2.2.0"'),
    ("AssertionError: MMCV==1.3.8 is used but incompatible. Please install mmcv>=(1, 3, 13, 0, 0, "
     "0), <=(1, 4, 0, 0, 0, 0).", 'mim install "mmcv-full>=1.3.13,<=1.4.0"'),
])
def test_openmmlabs_gate_installs_mmcv_in_its_range(matrix: Matrix, line: str,
                                                    install: str) -> None:
    found = top('  File "/work/mmdetection/mmdet/__init__.py", line 26, in <module>\n'
                f"{line}\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and found.message.startswith("mmdet ")
    assert install in said(found)


def test_two_openmmlab_gates_that_do_not_meet(matrix: Matrix) -> None:
    found = top("AssertionError: MMCV==1.4.0 is used but incompatible. Please install mmcv>=1.5.2,"
                " <=1.7.0.\nthen:\nAssertionError: MMCV==1.5.2 is used but incompatible. Please "
                "install mmcv>=1.3.8, <=1.4.0.\n", matrix)
    assert "do not meet ([1.5.2, 1.7.0] and [1.3.8, 1.4.0])" in found.message


def test_spconv_1x_code_on_spconv_2x(matrix: Matrix) -> None:
    found = top("AttributeError: module 'spconv' has no attribute 'SparseConv3d'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "import spconv.pytorch as spconv" in said(found) and "1.2.1" in said(found)


def test_spconvs_cpu_build_names_the_cuda_build(matrix: Matrix) -> None:
    found = top("AttributeError: type object 'spconv.core_cc.csrc.sparse.all.SpconvOps' has no "
                "attribute 'generate_subm_conv_inds'\ncuda version: 11.3\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "spconv-cu113" in said(found)


def test_jax_finding_torchs_older_cudnn_loads_jax_first(matrix: Matrix) -> None:
    found = top("import torch\nimport jax\nCUDA backend failed to initialize: Found cuDNN version "
                "8500, but JAX was built against version 8600, which is newer. The copy of cuDNN "
                "that is installed must be at least as new as the version against which JAX was "
                "built.\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "8.6.0" in found.message and "jax.devices()" in said(found)


def test_jax_finding_an_older_cuda_runtime_without_torch(matrix: Matrix) -> None:
    found = top("CUDA backend failed to initialize: Found CUDA version 12010, but JAX was built "
                "against version 12020, which is newer.\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and "CUDA 12.2" in found.message


@pytest.mark.parametrize("stated, spec", [("torchaudio : 0.14.0.dev20221215+cu116\n", "ffmpeg<5"),
                                          ("torchaudio==2.3.1\n", "ffmpeg<7"),
                                          ("", "ffmpeg<7")])
def test_torchaudio_without_ffmpeg_gets_the_releases_it_links(matrix: Matrix, stated: str,
                                                              spec: str) -> None:
    found = top(stated + 'ImportError: FFmpeg libraries are not found. Please install FFmpeg.\n',
                matrix)
    assert found.category == Category.NOT_INSTALLED
    assert f'conda install -c conda-forge "{spec}"' in said(found)


@pytest.mark.parametrize("line, name, version", [("torchaudio : 2.0.1", "torchaudio", "2.0.1"),
                                                 ("- mmcv: 1.7.1", "mmcv", "1.7.1"),
                                                 ("numpy = 1.26.4", "numpy", "1.26.4")])
def test_a_companion_stated_as_a_field_is_read(line: str, name: str, version: str) -> None:
    seen = Observed()
    read_environment(split(line), seen, GpuFinder(load_matrix(None)))
    assert seen.packages[name].value == version


def test_a_tabled_name_undefined_inside_a_library_is_its_package_missing(matrix: Matrix) -> None:
    found = top('  File "/usr/local/lib/python3.10/dist-packages/trl/trainer/utils.py", line 718, in '
                "get_peft_config\n    peft_config = LoraConfig(\nNameError: name 'LoraConfig' is not "
                "defined. Did you mean: 'ModelConfig'?\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "peft" in found.message
    assert "pip install peft" in said(found)


def test_an_untabled_name_is_not_guessed(matrix: Matrix) -> None:
    result = triage('  File "/usr/lib/python3/dist-packages/foo/bar.py", line 1, in x\nNameError: '
                    "name 'SomethingElse' is not defined\n", matrix)
    assert not any("is not installed here" in d.message for d in result.diagnosis)


def test_a_driver_for_cuda_10_1_names_the_cu101_builds(matrix: Matrix) -> None:
    found = top("RuntimeError: The NVIDIA driver on your system is too old (found version 10010).\n",
                matrix)
    assert "+cu101 build" in said(found)


def test_a_requirements_line_with_a_command_line_option(matrix: Matrix) -> None:
    found = top("ERROR: Invalid requirement: flash-attn --no-build-isolation\n", matrix)
    assert found.category == Category.BUILD_ISOLATION
    assert "pip install flash-attn --no-build-isolation" in said(found)


def test_a_variant_of_a_release_outside_the_matrix_is_not_judged(matrix: Matrix) -> None:
    """torch 1.12 was built for cu116, which no release the matrix holds was: not claimed."""
    result = triage("pip install torch==1.12.1 --index-url https://example.invalid/whl/cu116\n"
                    "ERROR: Could not find a version that satisfies the requirement torch==1.12.1"
                    " (from versions: none)\n", matrix)
    assert not any("has no cu116 build" in d.message for d in result.diagnosis)


def test_a_mach_o_reinstall_names_only_a_known_distribution(matrix: Matrix) -> None:
    found = top("ImportError: dlopen(/Users/me/env/lib/python3.11/site-packages/somemod/_x.so, "
                "0x0002): tried: '/Users/me/env/lib/python3.11/site-packages/somemod/_x.so' "
                "(mach-o file, but is an incompatible architecture (have 'x86_64', need "
                "'arm64'))\n", matrix)
    assert found.category == Category.WRONG_WHEEL
    assert all(not r.commands for r in found.remedies[:1])


def test_a_mach_o_reinstall_of_torch_is_a_pip_command(matrix: Matrix) -> None:
    found = top("OSError: dlopen(/Users/me/env/lib/python3.11/site-packages/torch/lib/libc10.dylib"
                ", 0x0002): (mach-o file, but is an incompatible architecture (have 'x86_64', need"
                " 'arm64e'))\n", matrix)
    assert "pip install --force-reinstall --no-cache-dir torch" in said(found)
