"""Generic mechanisms added in session 45, each on the words its source prints: mmdet's list-form
mmcv gate, spconv's CPU-only build and its published CUDA builds, PyG's ops without CUDA, torch
importing a module Triton removed, ggml-cuda's older no-arch error, CUDA's launch out of
resources, a build reading torch.version.cuda of a torch without CUDA, AT_DISPATCH given
tensor.type(), torch's host-compiler bound with its numbers, torch's own arch warning with
nothing newer known, Windows' procedure-not-found in other languages, and device functions of a
newer compute capability."""

from __future__ import annotations

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_spconv import _distribution


def test_mmdet_prints_its_mmcv_bounds_as_lists(matrix: Matrix) -> None:
    found = top('  File "/opt/conda/lib/python3.7/site-packages/mmdet/__init__.py", line 25\n'
                "AssertionError: MMCV==1.3.9 is used but incompatible. Please install "
                "mmcv>=[1, 1, 4], <=[1, 2, 0].\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert ">= 1.1.4, <= 1.2.0" in found.message and "1.3.9 is installed" in found.message
    assert "mmcv-full>=1.1.4,<=1.2.0" in said(found)


def test_spconvs_cpu_only_build_names_the_cuda_build_that_exists(matrix: Matrix) -> None:
    report = ("PyTorch: 1.8.0+cu101\nRuntimeError: /io/build/temp.linux-x86_64-cpython-37/spconv/"
              "build/core_cc/src/csrc/sparse/all/SpconvOps/SpconvOps_get_indice_pairs.cc(65) not "
              "implemented for CPU ONLY build.\n")
    found = top(report, matrix)
    assert found.category == Category.WRONG_WHEEL and "CPU build" in found.message
    assert "spconv-cu102 (none is published for CUDA 10.1)" in said(found)


@pytest.mark.parametrize("cuda, name", [(118, "spconv-cu118"), (115, "spconv-cu114 (none"),
                                        (112, "spconv-cu111 (none"), (128, "spconv-cu126 (none"),
                                        (90, "spconv-cuXYZ")])
def test_the_spconv_distribution_is_one_the_index_publishes(cuda: int, name: str) -> None:
    assert _distribution(cuda).startswith(name)


def test_a_pyg_op_without_cuda_is_its_cpu_build(matrix: Matrix) -> None:
    report = ('  File "/env/lib/python3.9/site-packages/torch_cluster/radius.py", line 72, in '
              "radius\n    return torch.ops.torch_cluster.radius(x, y, ptr_x, ptr_y, r,\n"
              "RuntimeError: Not compiled with CUDA support\n")
    found = top(report, matrix)
    assert found.category == Category.WRONG_WHEEL
    assert found.message.startswith("torch-cluster is its CPU build")
    assert "FORCE_CUDA=1" in said(found) and "uninstall -y torch-cluster" in said(found)
    named = top("pip3 install torch-scatter==2.1.1 -f <index>\nRuntimeError: Not compiled with "
                "CUDA support\n", matrix)
    assert named.message.startswith("torch-scatter is its CPU build")


def test_the_words_alone_name_no_pyg_package(matrix: Matrix) -> None:
    result = triage("RuntimeError: Not compiled with CUDA support\n", matrix)
    assert not any("CPU build" in d.message for d in result.diagnosis)


def test_torch_importing_a_module_triton_removed(matrix: Matrix) -> None:
    report = ('  File "/env/lib/python3.10/site-packages/torch/utils/_triton.py", line 37, in '
              "triton_backend_hash\n    from triton.common.backend import get_backend\n"
              "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
              "ModuleNotFoundError: No module named 'triton.common'\n")
    found = top(report, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "up to 2.3.1 and removed in 3.0.0" in found.message
    assert "torch==2.4.0+cu" in said(found)  # the first torch whose pin is Triton 3.0


def test_a_module_triton_still_has_is_not_this(matrix: Matrix) -> None:
    result = triage('  File "/env/lib/python3.10/site-packages/torch/_inductor/x.py", line 1\n'
                    "ModuleNotFoundError: No module named 'triton.language'\n", matrix)
    assert not any("removed in" in d.message for d in result.diagnosis)


def test_ggml_cuda_built_without_the_gpus_arch(matrix: Matrix) -> None:
    found = top("GPU: NVIDIA GeForce GTX 1070 Ti (8GB, Pascal)\nERROR: ggml-cuda was compiled "
                "without support for the current GPU architecture.\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "sm_61" in found.message
    assert "-DCMAKE_CUDA_ARCHITECTURES=61" in said(found)


def test_a_launch_asking_for_more_registers_than_the_gpu_has(matrix: Matrix) -> None:
    found = top('error in modulated_deformable_im2col_cuda": too many resources requested for '
                "launch\n", matrix)
    assert found.category == Category.KERNEL_FAILURE
    assert "CUDA_NUM_THREADS" in said(found) and "-maxrregcount" in said(found)


@pytest.mark.parametrize("where, category", [
    ("/private/var/folders/qm/T/pip-install-x/auto-gptq_1/setup.py", Category.PLATFORM_UNSUPPORTED),
    ("/tmp/pip-install-x/auto-gptq_1/setup.py", Category.TORCH_CPU_ONLY)])
def test_a_build_reading_the_cuda_of_a_torch_without_cuda(matrix: Matrix, where: str,
                                                          category: Category) -> None:
    found = top(f'  File "{where}", line 21, in <module>\n    CUDA_VERSION = "".join('
                'torch.version.cuda.split("."))\nAttributeError: \'NoneType\' object has no '
                "attribute 'split'\n", matrix)
    assert found.category == category and "torch.version.cuda is None" in found.message


def test_none_elsewhere_is_not_torchs_cuda(matrix: Matrix) -> None:
    result = triage("x = config.get('a').split()\nAttributeError: 'NoneType' object has no "
                    "attribute 'split'\n", matrix)
    assert not any("torch.version.cuda" in d.message for d in result.diagnosis)


@pytest.mark.parametrize("line", [
    'ms_deform_attn_cuda.cu(65): error: no suitable conversion function from "const '
    'at::DeprecatedTypeProperties" to "c10::ScalarType" exists',
    "csrc/nms.cpp:12:5: error: cannot convert 'const at::DeprecatedTypeProperties' to "
    "'c10::ScalarType'"])
def test_at_dispatch_given_tensor_type(matrix: Matrix, line: str) -> None:
    found = top(line + "\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "2.6" in found.message
    assert "scalar_type()" in said(found) and "2.5.1" in said(found)


@pytest.mark.parametrize("tail, most", [
    ("by CUDA 11.3 (10.0.0). Please make sure to use an adequate version of g++ (>=5.0.0, "
     "<=10.0.0).", 10),
    ("by CUDA 12.1. Please make sure to use an adequate version of g++ (>=6.0.0, <13.0).", 12)])
def test_the_host_compiler_bound_uses_the_printed_numbers(matrix: Matrix, tail: str,
                                                          most: int) -> None:
    found = top("RuntimeError: The current installed version of g++ (14.2.0) is greater than the "
                f"maximum required version {tail}\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert f"CC=gcc-{most} CXX=g++-{most}" in said(found)
    assert "admits g++ 14: CUDA 12.8 or later" in said(found)


def test_torchs_arch_warning_with_every_known_release_fitting(matrix: Matrix) -> None:
    warning = ("/venv/lib/python{py}/site-packages/torch/cuda/__init__.py:146: UserWarning:\n"
               "NVIDIA GeForce RTX 3080 Laptop GPU with CUDA capability sm_86 is not compatible "
               "with the current PyTorch installation.\nThe current PyTorch install supports CUDA "
               "capabilities sm_37 sm_50 sm_60 sm_70.\n")
    old = top(warning.format(py="3.7"), matrix)
    assert old.category == Category.NO_KERNEL_IMAGE
    assert "Python 3.7 is older than any torch" in said(old)
    current = top(warning.format(py="3.11"), matrix)
    assert "The installed torch is a build without sm_86" in said(current)
    assert "--index-url" in said(current)


@pytest.mark.parametrize("words", ["找不到指定的程序。", "Die angegebene Prozedur wurde nicht gefunden.",
                                   "指定されたプロシージャが見つかりません。"])
def test_windows_procedure_not_found_in_other_languages(matrix: Matrix, words: str) -> None:
    found = top(f"ImportError: DLL load failed while importing exllamav2_ext: {words}\n", matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH and "exllamav2" in found.message


def test_a_device_function_of_a_newer_compute_capability(matrix: Matrix) -> None:
    error = ('render.cuh(260): error: identifier "__nanosleep" is undefined\n')
    on_old = top("GPU: NVIDIA GeForce GTX 980\n" + error, matrix)
    assert on_old.category == Category.GPU_UNSUPPORTED and "7.0" in on_old.message
    built = top(error, matrix)
    assert built.category == Category.BUILD_TOOLCHAIN and "TORCH_CUDA_ARCH_LIST" in said(built)


def test_an_extension_built_by_nvcc_before_92(matrix: Matrix) -> None:
    found = top("ImportError: /env/lib/python3.8/site-packages/MultiScaleDeformableAttention.cpython"
                "-38-x86_64-linux-gnu.so: undefined symbol: cudaSetupArgument\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "older than CUDA 9.2" in found.message and "CUDA_HOME" in said(found)


def test_a_retyped_module_name_beside_a_torch_no_pin_is_known_for(matrix: Matrix) -> None:
    found = top("ModuleNotFoundError: No module named 'triton. common'\nusing the compile model "
                "node\ntriton :3.1.0\ntorch=2.31+cu121\n", matrix)
    assert "torch imports triton.common" in found.message


def test_a_model_needing_a_transformers_above_llamafactorys_range(matrix: Matrix) -> None:
    found = top("- `llamafactory` version: 0.9.2.dev0\n- Transformers version: 4.46.1\nInternLM3 "
                "requires transformers>=4.47.1, but llamafactory pins <=4.46.1\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "DISABLE_VERSION_CHECK=1" in said(found) and "transformers>=4.47.1" in said(found)


@pytest.mark.parametrize("where, expected", [
    ("I run it on my macbook m3", True), ("/Users/me/venv/lib/python3.11/site-packages/x.py", True),
    ("Ubuntu 22.04, GeForce RTX 3090", False)])
def test_no_cuda_device_on_a_mac(matrix: Matrix, where: str, expected: bool) -> None:
    result = triage(f"{where}\nRuntimeError: no CUDA device found\n", matrix)
    assert any(d.category == Category.PLATFORM_UNSUPPORTED and "Mac" in d.message
               for d in result.diagnosis) == expected


def test_a_driver_older_than_any_pytorch_binary_is_upgraded_not_matched(matrix: Matrix) -> None:
    found = top("RuntimeError: The NVIDIA driver on your system is too old (found version 6000)."
                "\n", matrix)
    assert found.category == Category.DRIVER_TOO_OLD
    assert "no PyTorch binary was ever built for CUDA 6.0" in said(found)
    assert "+cu60" not in said(found)


def test_dgl_without_a_graphbolt_build_for_this_torch(matrix: Matrix) -> None:
    found = top("FileNotFoundError: Cannot find DGL C++ graphbolt library at /env/lib/python3.10/"
                "site-packages/dgl/graphbolt/libgraphbolt_pytorch_2.3.1.so\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "torch 2.3.1" in found.message
    assert "torch-2.3" in said(found) and "libgraphbolt_pytorch_<version>" in said(found)
    other = top("ImportError: Cannot load Graphbolt C++ library\n", matrix)
    assert other.category == Category.TORCH_VERSION_MISMATCH


@pytest.mark.parametrize("text, needs", [
    ("onnxruntime-gpu 1.18.1\n[E:onnxruntime:Default, provider_bridge_ort.cc:1548] "
     "onnxruntime_pybind_state.cc:857 CUDA_PATH is set but CUDA wasnt able to be loaded. Please "
     "install the correct version of CUDA and cuDNN\n", "CUDA 11.8 and cuDNN 8"),
    ("[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965] Failed to create "
     "CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*, and the latest MSVC runtime.\n",
     "CUDA 12.x and cuDNN 9")])
def test_onnxruntimes_cuda_provider_without_its_libraries(matrix: Matrix, text: str,
                                                          needs: str) -> None:
    found = top(text, matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and needs in found.message
    assert "onnxruntime-gpu>=1.19" in said(found) and "import torch before onnxruntime" in said(found)


@pytest.mark.parametrize("line", ["NameError: name 'fused_act_ext' is not defined",
                                  "ImportError: cannot import name 'deform_conv_ext' from "
                                  "'basicsr.ops.dcn'"])
def test_basicsrs_ops_never_built(matrix: Matrix, line: str) -> None:
    found = top(line + "\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "BASICSR_EXT=True" in said(found)


def test_fusedmlp_none_is_flash_attns_separate_extension(matrix: Matrix) -> None:
    found = top("the function FusedMLP returns a NoneType value\nTypeError: 'NoneType' object is "
                "not callable\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "csrc/fused_dense_lib" in said(found)


def test_realesrgan_on_the_cpu_beside_an_nvidia_gpu(matrix: Matrix) -> None:
    text = ("GPU: NVIDIA GeForce RTX 3080\nUserWarning: The unoptimized RealESRGAN is slow on CPU. "
            "We do not use it.\n")
    assert top(text, matrix).category == Category.TORCH_CPU_ONLY
    alone = triage(text.split("\n", 1)[1], matrix)
    assert not any(d.category == Category.TORCH_CPU_ONLY for d in alone.diagnosis)


def test_a_linux_library_on_a_mac(matrix: Matrix) -> None:
    found = top("OSError: dlopen(/usr/local/lib/python3.12/site-packages/fbgemm_gpu/fbgemm_gpu_py."
                "so, 0x0006): tried: '/usr/local/lib/python3.12/site-packages/fbgemm_gpu/"
                "fbgemm_gpu_py.so' (not a mach-o file)\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "fbgemm_gpu" in found.message


def test_x86_options_on_another_architecture(matrix: Matrix) -> None:
    found = top("g++: error: unrecognized command line option '-mavx2'\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "-mavx2" in found.message


def test_black_images_said_in_chinese_on_a_gtx_16(matrix: Matrix) -> None:
    found = top("显卡信息\uff1aNVIDIA GeForce RTX 1660Ti\n输出的图片全为黑色\n", matrix)
    assert found.category == Category.NUMERICS and "GTX 16" in found.message


def test_triton_asked_of_pip_in_windows_cmd(matrix: Matrix) -> None:
    found = top('when i run "pip install -r requirements.txt", cmd shows "ERROR: Could not find a '
                'version that satisfies the requirement triton"\n', matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "triton-windows" in said(found)


def test_a_torchvision_module_a_release_removed(matrix: Matrix) -> None:
    found = top("ModuleNotFoundError: No module named 'torchvision.transforms.functional_tensor'\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "up to 0.16.2 and 0.17 removed" in found.message
    assert "torchvision.transforms._functional_tensor" in said(found)
    assert "torchvision==0.16.2 torch==2.1.2" in said(found)
    newer = top("ModuleNotFoundError: No module named 'torchvision.transforms.v2'\n", matrix)
    assert "from 0.15 on" in newer.message and "torchvision>=0.15" in said(newer)


def test_a_newer_libstdcxx_not_a_newer_glibc(matrix: Matrix) -> None:
    found = top("ImportError: /lib64/libstdc++.so.6: version `GLIBCXX_3.4.29' not found (required "
                "by /env/lib/python3.10/site-packages/fbgemm_gpu/fbgemm_gpu_py.so)\n", matrix)
    assert found.category == Category.GLIBC_TOO_OLD
    assert "libstdc++ of GCC 11.1.0 or newer" in said(found) and "libstdcxx-ng" in said(found)
    assert "whose glibc is" not in said(found)


@pytest.mark.parametrize("words, torch_focused", [
    ("p2.xlarge with Tesla K80: is this GPU not supported?", True),
    ("V100 GPU not supported", False), ("Tesla K80 not supported by flash attention", False)])
def test_an_old_gpu_said_unsupported_without_an_attention_library(
        matrix: Matrix, words: str, torch_focused: bool) -> None:
    found = top(words + "\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED
    assert ("current PyTorch builds" in found.message) == torch_focused


def test_any_other_missing_module_is_its_distribution_not_installed(matrix: Matrix) -> None:
    found = top('  File "/work/aot/networks/layers/attention.py", line 282, in __init__\n'
                "    from spatial_correlation_sampler import SpatialCorrelationSampler\n"
                "ModuleNotFoundError: No module named 'spatial_correlation_sampler'\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "spatial-correlation-sampler" in said(found)
    assert not found.remedies[0].commands  # a name fadoctor does not know: no pip command
    known = top("ModuleNotFoundError: No module named 'xformers'\n", matrix)
    assert known.message.startswith("the program was set to use xformers")  # ranks first
    for compiled in ("sam2._C", "fused_layer_norm_cuda", "torch"):
        result = triage(f"ModuleNotFoundError: No module named '{compiled}'\n", matrix)
        assert not any("ran this code (a dependency" in d.message for d in result.diagnosis)


def test_a_c10d_symbol_is_torchs_and_fbgemm_gpu_owns_its_binary(matrix: Matrix) -> None:
    found = top("torch 2.4.0\nImportError: /usr/local/lib/python3.10/dist-packages/fbgemm_gpu/"
                "experimental/gen_ai/fbgemm_gpu_experimental_gen_ai_py.so: undefined symbol: "
                "_ZN4c10d23ncclGetErrorWithVersionE12ncclResult_t\npip3 install apex fbgemm_gpu\n",
                matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert found.message.startswith("fbgemm-gpu:") and "apex" not in said(found)


def test_torchvision_of_another_cuda_build_than_torch(matrix: Matrix) -> None:
    found = top("RuntimeError: Detected that PyTorch and torchvision were compiled with different "
                "CUDA major versions. PyTorch has CUDA Version=12.1 and torchvision has CUDA "
                "Version=11.8. Please reinstall the torchvision that matches your PyTorch install."
                "\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "--index-url" in said(found) and "/cu121" in said(found)


def test_a_half_precision_refusal_on_a_gtx_16(matrix: Matrix) -> None:
    result = triage("NVIDIA GeForce GTX 1660 SUPER\nRuntimeError: expected scalar but found half "
                    "float\n", matrix)
    assert any(d.category == Category.NUMERICS and "GTX 16 card" in d.message
               for d in result.diagnosis)


@pytest.mark.parametrize("line, cc", [("Release 22 doesn't support Geforce 5090.", "12.0"),
                                      ("GPU: 980 TI", "5.2")])
def test_geforce_models_by_number_with_a_gpu_word(matrix: Matrix, line: str, cc: str) -> None:
    found = top(line + "\nRuntimeError: CUDA error: no kernel image is available for execution on "
                "the device\n", matrix)
    assert f"sm_{cc.replace('.', '')}" in found.message


def test_a_glibc_refusal_outside_flash_attention_builds_that_program(matrix: Matrix) -> None:
    found = top("./chat: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found "
                "(required by ./chat)\n", matrix)
    assert found.category == Category.GLIBC_TOO_OLD
    assert "flash" not in said(found).lower() and "Build it from source" in said(found)


def test_torchs_dll_refusal_with_the_path_on_the_next_line(matrix: Matrix) -> None:
    found = top("ERROR    Could not load torch: [WinError 126] Das angegebene Modul wurde nicht "
                "gefunden. Error loading\n"
                '    "P:\\AI\\venv\\lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its '
                "dependencies.\n", matrix)
    assert "fbgemm.dll" in found.message and "libomp140" in found.message


def test_onnxruntimes_own_status_text(matrix: Matrix) -> None:
    found = top("[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 \"\"\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and "onnxruntime-gpu" in found.message
