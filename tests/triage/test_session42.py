"""Generic mechanisms widened in session 42, each from a class of misses in the older report sets:
a head dim a kernel library refuses in the report's own words, a dispatch macro without the
tensors' dtype, and a capability floor whose message states the GPU's capability itself."""

from __future__ import annotations

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


@pytest.mark.parametrize("words, library, dim", [
    ("[Bug] head_dim 96 not supported\nsglang 0.2.13 with --disable-flashinfer\n", "SGLang", 96),
    ("vLLM: I tried to load a model whose `head_size` is 256, but it is not supported yet.\n",
     "vLLM", 256),
    ("Support head_dim 256 for Ideogram 4.0\nsage attention still complains about unsupported "
     "head_dim 256\n", "SageAttention", 256),
])
def test_a_head_dim_told_as_refused_names_the_library_and_dim(words: str, library: str, dim: int,
                                                              matrix: Matrix) -> None:
    found = top(words, matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED
    assert library in found.message and f"head_dim {dim}" in said(found) and "sdpa" in said(found)


def test_a_quoted_list_of_head_dims_is_named(matrix: Matrix) -> None:
    found = top("`head_size` only be [8, 16, 32, 64, 128] in AITemplate's flash_attention\n",
                matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED
    assert "8, 16, 32, 64, 128" in found.message


def test_deepseeks_hidden_over_heads_is_not_its_head_dim(matrix: Matrix) -> None:
    found = top("why flashinfer doesnt support head size dim of 56?\n56 is now common head size "
                "dim with deepseek\n", matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED
    assert "MLA" in said(found) and "192" in said(found) and "576" in said(found)


def test_a_head_dim_supported_is_not_a_refusal(matrix: Matrix) -> None:
    result = triage("vllm now supports head_dim 256 for gemma, thanks\n", matrix)
    assert all(d.category != Category.HEAD_DIM_UNSUPPORTED for d in result.diagnosis)


_SAGE = ("RuntimeError: at::Tensor qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf(at::Tensor, "
         "at::Tensor, int, float, int) failed to dispatch data type {}\n")


def test_float32_into_a_half_kernel_is_cast(matrix: Matrix) -> None:
    found = top("import sageattention\n" + _SAGE.format("Float"), matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "float32" in found.message and "SageAttention" in found.message
    assert "float16" in said(found)


def test_bfloat16_into_the_kernel_on_turing_is_the_gpu(matrix: Matrix) -> None:
    found = top("Tesla T4\nimport sageattention\n" + _SAGE.format("BFloat16"), matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "no bfloat16 units" in found.message and "torch.float16" in said(found)


def test_a_floor_that_states_the_gpus_capability_is_read_without_a_gpu_name(
        matrix: Matrix) -> None:
    found = top("ERROR: FP8 models require a GPU with Compute Capability 8.9 or higher (e.g., RTX "
                "4090). Your GPU's capability is 8.6. Please select a non-FP8 model.\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED
    assert "8.6" in found.message and "non-FP8" in said(found)


def test_a_gpu_given_as_an_example_is_not_the_reporters(matrix: Matrix) -> None:
    result = triage("ERROR: this kernel needs a GPU with Compute Capability 8.9 or higher (e.g., "
                    "RTX 4090). Your GPU's capability is 9.0.\n", matrix)
    assert all(d.category != Category.GPU_UNSUPPORTED for d in result.diagnosis)


def test_a_floor_is_not_the_gpus_capability(matrix: Matrix) -> None:
    from fadoctor.triage.environment import read_environment
    from fadoctor.triage.gpus import GpuFinder
    from fadoctor.triage.observed import GPU_CC, Observed
    from fadoctor.triage.text import split

    text = split(b"requires compute capability 8.9 or higher; this device's capability: 7.5\n")
    seen = Observed()
    read_environment(text, seen, GpuFinder(matrix))
    assert seen.get(GPU_CC) == "7.5"


@pytest.mark.parametrize("line", [
    "C:/Python313/Lib/site-packages/torch/include\\torch/csrc/dynamo/compiled_autograd.h(1134): "
    "error C2872: 'std': ambiguous symbol",
    "D:/comfy/Lib/site-packages/torch/include\\torch/csrc/dynamo/compiled_autograd.h(1135): error "
    "C2872: “std”: 不明确的符号",
])
def test_torch_29s_header_under_msvc_defines_use_cuda(line: str, matrix: Matrix) -> None:
    found = top(line + "\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "USE_CUDA" in said(found) and "torch 2.8" in said(found)


@pytest.mark.parametrize("error, pin", [
    ("AttributeError: module 'distutils._msvccompiler' has no attribute '_get_vc_env'",
     "setuptools<=75.8.2"),
    ("AttributeError: module 'distutils' has no attribute '_msvccompiler'", "setuptools<74"),
])
def test_setuptools_without_its_msvc_helper_is_pinned(error: str, pin: str, matrix: Matrix) -> None:
    found = top("File \"torch\\utils\\cpp_extension.py\", line 2100, in _get_vc_env\n" + error
                + "\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and pin in said(found)


def test_deepspeeds_cuda_home_message_is_a_missing_toolkit(matrix: Matrix) -> None:
    found = top("op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to "
                "compile CUDA op(s)\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "CUDA_HOME" in said(found)


def test_no_cub_is_a_toolkit_older_than_11(matrix: Matrix) -> None:
    found = top("csrc/moe_cuda_kernel.cu:5:10: fatal error: cub/cub.cuh: No such file or "
                "directory\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "11.0" in found.message
    assert "which nvcc" in said(found)


def test_a_driver_of_a_cuda_major_runs_that_majors_runtimes(matrix: Matrix) -> None:
    found = top("RuntimeError: The NVIDIA driver on your system is too old (found version 11060)."
                "\n", matrix)
    assert found.category == Category.DRIVER_TOO_OLD
    assert "+cu11" in said(found) and "minor-version compatibility" in said(found)


def test_an_old_gcc_on_a_cluster_loads_a_module(matrix: Matrix) -> None:
    text = ("installing on our HPC cluster, python setup.py install\n"
            "#error \"You're running a too old version of GCC. We need GCC 5 or later.\"\n"
            "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit "
            "status 1.\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "module load gcc" in said(found)
    plain = top(text.replace("on our HPC cluster", "here"), matrix)
    assert "module load" not in said(plain)


def test_a_half_fft_on_maxwell_runs_in_float32(matrix: Matrix) -> None:
    found = top("RuntimeError: cuFFT doesn't support signals of half type with compute capability "
                "less than SM_53, but the device containing input half tensor only has SM_52\n",
                matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "sm_52" in found.message
    assert "float32" in said(found)


def test_a_half_fft_of_another_size_is_a_dtype_limit(matrix: Matrix) -> None:
    found = top("RuntimeError: cuFFT only supports dimensions whose sizes are powers of two when "
                "computing in half precision, but got a signal size of[48]\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "power of two" in said(found)


@pytest.mark.parametrize("where, windows", [("windows平台下vscode运行", True), ("on my Ubuntu box", False)])
def test_the_jit_loader_without_ninja(where: str, windows: bool, matrix: Matrix) -> None:
    found = top(f"{where} train.py: RuntimeError: Ninja is required to load C++ extensions\n",
                matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "pip install ninja" in said(found)
    assert ("Native Tools Command Prompt" in said(found)) is windows


def test_xformers_old_guard_names_a_build_for_another_gpu(matrix: Matrix) -> None:
    found = top("Tesla T4 worked, A10G fails:\nFATAL: this function is for sm80, but was built for "
                "sm750\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "sm75" in found.message
    assert "7.5 8.6" in said(found) and "uninstall -y xformers" in said(found)


def test_an_extension_the_package_went_on_without(matrix: Matrix) -> None:
    found = top("---> 53     output = _C.ms_deform_attn_forward(\nNameError: name '_C' is not "
                "defined\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "CUDA_HOME" in said(found)


def test_a_value_an_older_release_does_not_list(matrix: Matrix) -> None:
    found = top('  File "/venv/lib/python3.10/site-packages/lightning/fabric/connector.py", line '
                "549, in _convert_precision_to_unified_args\n    raise ValueError(...)\n"
                "ValueError: Precision 'bf16-true' is invalid. Allowed precision values: "
                "('16-mixed', 'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', '16', "
                "'bf16')\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "pip install --upgrade lightning" in said(found)


def test_a_listed_value_is_not_blamed_on_the_release(matrix: Matrix) -> None:
    result = triage("ValueError: Precision 'bf16' is invalid. Allowed precision values: ('bf16', "
                    "'32')\n", matrix)
    assert all(d.category != Category.VERSION_CONFLICT for d in result.diagnosis)


def test_diffusers_xformers_not_available_is_not_installed(matrix: Matrix) -> None:
    found = top("ValueError: xformers is not available. Make sure it is installed correctly\n",
                matrix)
    assert found.category == Category.NOT_INSTALLED and "sdpa" in said(found)


@pytest.mark.parametrize("name, gfx", [("AMD Radeon 7900 XTX", "gfx1100"),
                                       ("Radeon RX 6700 XT", "gfx1031"),
                                       ("Instinct MI250X", "gfx90a"), ("RX 9070 XT", "gfx1201")])
def test_amd_products_name_their_gfx_target(name: str, gfx: str) -> None:
    from fadoctor.triage.amd_targets import gfx_of

    assert gfx_of(name) == gfx


def test_a_ggml_hip_build_without_the_gpus_target(matrix: Matrix) -> None:
    found = top("ggml_init_cublas: found 1 ROCm devices:\nCUDA error 98 at /code/llama.cpp/"
                "ggml-cuda.cu:6246: invalid device function\nrunning with rocm 5.7, AMD Radeon "
                "7900 XTX in docker\n", matrix)
    assert found.category == Category.ROCM and "-DGPU_TARGETS=gfx1100" in said(found)


def test_vllms_fp8_kv_cache_below_ada(matrix: Matrix) -> None:
    found = top("ValueError: FP8 KV cache is not supported by the Triton attention backend on "
                "Quadro RTX 8000 (compute capability 7.5); native FP8 (fp8e4nv) requires SM89+.\n",
                matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "--kv-cache-dtype auto" in said(found)


def test_ctranslate2_on_windows_without_cudnn_9(matrix: Matrix) -> None:
    found = top("faster-whisper with ctranslate2 4.5.0: Could not locate cudnn_ops64_9.dll\n",
                matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "ctranslate2==4.4.0" in said(found)


def test_a_macos_feature_newer_than_the_deployment_target(matrix: Matrix) -> None:
    found = top("cast.h:579:34: error: aligned allocation function of type 'void *(std::size_t, "
                "std::align_val_t)' is only available on macOS 10.14 or newer\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "MACOSX_DEPLOYMENT_TARGET=10.14" in said(found)


@pytest.mark.parametrize("question, words", [
    ("Does xformers work also with AMD GPUs /ROCm or is it only for Nvidia cards?", "0.0.28"),
    ("[Feature] sglang.rocm support flashinfer? amdgpu上运行sglang 是否需要安装flashinfer", "triton"),
])
def test_a_cuda_library_asked_about_on_amd(question: str, words: str, matrix: Matrix) -> None:
    found = top(question + "\n", matrix)
    assert found.category == Category.ROCM and words in said(found)


def test_a_cuda_torch_on_an_amd_machine(matrix: Matrix) -> None:
    found = top("Name: torch\nVersion: 2.0.1\nRequires: filelock, nvidia-cublas-cu11, "
                "nvidia-cuda-runtime-cu11\nis there torch ROCm version needed to make this work "
                "with ROCm enabled AMD GPUs?\n", matrix)
    assert found.category == Category.ROCM and "ROCm build" in said(found)


def test_a_cuda_torch_beside_an_nvidia_gpu_is_not_blamed(matrix: Matrix) -> None:
    result = triage("GPU 0: NVIDIA GeForce RTX 4090\nRequires: nvidia-cublas-cu12\nI also own an "
                    "AMD Radeon RX 7900 XTX\n", matrix)
    assert all(d.category != Category.ROCM for d in result.diagnosis)


_BNB_WIN = ("===================================BUG REPORT===================================\n"
            "The following directories listed in your path were found to be non-existent: "
            "{WindowsPath('C')}\nCUDA_SETUP: WARNING! libcudart.so not found in any environmental "
            "path.\nCUDA Setup failed despite GPU being available. python -m bitsandbytes\n")


def test_bitsandbytes_before_its_windows_support(matrix: Matrix) -> None:
    found = top(_BNB_WIN, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "bitsandbytes>=0.43.0" in said(found)


def test_bitsandbytes_on_a_mac(matrix: Matrix) -> None:
    found = top("I am on an M2 Max MacOS\nbin /Users/me/env/lib/python3.10/site-packages/bitsandbytes"
                "/libbitsandbytes_cpu.so\nThe installed version of bitsandbytes was compiled without "
                "GPU support.\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "Apple Silicon" in said(found)


def test_a_newer_bitsandbytes_on_windows_is_not_its_old_setup(matrix: Matrix) -> None:
    result = triage("Could not find the bitsandbytes CUDA binary at WindowsPath('A:/c/venv/lib/"
                    "site-packages/bitsandbytes/libbitsandbytes_cuda128.dll')\nThe installed "
                    "version of bitsandbytes was compiled without GPU support.\n", matrix)
    assert all(d.category != Category.PLATFORM_UNSUPPORTED for d in result.diagnosis)


def test_msvc_not_on_path(matrix: Matrix) -> None:
    found = top("building 'diff_gaussian_rasterization._C' extension\nerror: command 'cl.exe' "
                "failed: None\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "vcvars64" in said(found)


def test_tensorrt_fp8_qdq_on_ampere(matrix: Matrix) -> None:
    found = top("NVIDIA RTX A6000\n[E] Error[9]: IBuilder::buildSerializedNetwork: Error Code 9: "
                "API Usage Error (Networks with FP8 Q/DQ layers require hardware with FP8 "
                "support.)\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "int8" in said(found)


def test_cublas_bf16_on_maxwell(matrix: Matrix) -> None:
    found = top("my GPU is a Tesla M40\nRuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when "
                "calling `cublasGemmStridedBatchedEx(handle, opa, opb, (int)m, (int)n, (int)k, "
                "(void*)&falpha, a, CUDA_R_16BF, (int)lda)`\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "float16" in said(found)


def test_a_cuda_older_than_the_gpu(matrix: Matrix) -> None:
    found = top("CUDA 9.0\ncuDNN 7.5 for cuda 9.0\nRTX 2080 ti\nRuntimeError: cuDNN error: "
                "CUDNN_STATUS_EXECUTION_FAILED\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "CUDA 10.0" in said(found)


def test_a_cuda_new_enough_for_the_gpu_is_not_blamed(matrix: Matrix) -> None:
    result = triage("CUDA 11.8\nRTX 2080 ti\nRuntimeError: cuDNN error: "
                    "CUDNN_STATUS_EXECUTION_FAILED\n", matrix)
    assert all("predates" not in d.message for d in result.diagnosis)


def test_a_jetpack_4_container_without_the_nvidia_runtime(matrix: Matrix) -> None:
    found = top("I'm running the container \"dustynv/ros:noetic-pytorch-l4t-r32.5.0\" on a Jetson AGX"
                "\n>>> import torch\nOSError: libcurand.so.10: cannot open shared object file: No "
                "such file or directory\n", matrix)
    assert found.category == Category.NO_GPU and "--runtime nvidia" in said(found)


def test_an_l4t_container_on_another_l4t_host(matrix: Matrix) -> None:
    found = top("Can I run r34.1 container with CUDA on r32.6 (Jetpack 4)?\ndocker run --rm -it "
                "--gpus all nvcr.io/nvidia/l4t-ml:r34.1.0-py3 bash\n", matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "r32.6" in said(found)


def test_wsl_without_its_libcuda_on_the_path(matrix: Matrix) -> None:
    found = top("I am using WSL2 with Python 3.11\nCould not load library libcudnn_cnn_infer.so.8. "
                "Error: libcuda.so: cannot open shared object file: No such file or directory\n",
                matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and "/usr/lib/wsl/lib" in said(found)
    assert all("$" not in c for r in found.remedies for c in r.commands)


def test_torch_compile_refused_on_windows(matrix: Matrix) -> None:
    found = top("RuntimeError: Windows not yet supported for torch.compile\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "WSL2" in said(found)


def test_a_symlink_without_the_privilege(matrix: Matrix) -> None:
    found = top('  File "F:\\xformers\\setup.py", line 83, in symlink_package\n    os.symlink('
                "src=path_from, dst=path_to)\nOSError: [WinError 1314] A required privilege is not "
                "held by the client\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "Developer Mode" in said(found)


def test_a_cuda_torch_installed_on_a_rocm_machine(matrix: Matrix) -> None:
    found = top("Installing ComfyUI on Linux with ROCM\nAMD Radeon RX 7900 XT\nRuntimeError: Found "
                "no NVIDIA driver on your system.\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "--index-url" in said(found)


def test_directml_with_xformers(matrix: Matrix) -> None:
    found = top('venv "C:\\stable-diffusion-webui-directml\\venv\\Scripts\\Python.exe"\nLaunching '
                "Web UI with arguments: --xformers\nWarning: caught exception 'Torch not compiled "
                "with CUDA enabled'\nNotImplementedError: No operator found for "
                "`memory_efficient_attention_forward` with inputs:\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert "--opt-sub-quad-attention" in said(found)


def test_triton_on_pascal_can_turn_compile_off(matrix: Matrix) -> None:
    found = top("RuntimeError: Found NVIDIA GeForce GTX 1080 Ti which is too old to be supported by "
                "the triton GPU compiler, which is used as the backend. Triton only supports "
                "devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.1\n",
                matrix)
    assert "TORCHDYNAMO_DISABLE=1" in said(found)


def test_a_library_named_like_torchs_is_not_torch(matrix: Matrix) -> None:
    found = top("torch 1.8.1\nImportError: /env/site-packages/torch_ccl/lib/libtorch_ccl.so: undefined "
                "symbol: _ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_"
                "traitsIcESaIcEEE\n", matrix)
    assert found.category == Category.CXX11_ABI_MISMATCH and "torch_ccl" in found.message
    assert "_GLIBCXX_USE_CXX11_ABI=0" in said(found) and "flash-attn" not in said(found)
    assert not any(r.commands for r in found.remedies)  # its index name is not torch_ccl


def test_c10_errors_missing_form_names_torchs_abi(matrix: Matrix) -> None:
    found = top("flash-attn==2.8.0.post2\nImportError: site-packages/flash_attn_2_cuda.cpython-310-"
                "x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__"
                "cxx1112basic_stringIcSt11char_traitsIcESaIcEEE\n", matrix)
    assert found.category == Category.CXX11_ABI_MISMATCH
    assert "2.7.4.post1" in said(found)


def test_an_nvcc_older_than_torchs_cuda_fails_an_extension(matrix: Matrix) -> None:
    found = top("pytorch==1.13.0+cu116\ncuda版本11.0\nRuntimeError: Error building extension "
                "'fused_adam'\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "11.6" in said(found)


def test_a_per_arch_extension_without_this_gpus(matrix: Matrix) -> None:
    found = top("OSError: Could not find compatible tinycudann extension for compute capability "
                "87.\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE
    assert "TCNN_CUDA_ARCHITECTURES=87" in said(found)


def test_sampling_from_inf_or_nan_logits(matrix: Matrix) -> None:
    found = top("RuntimeError: probability tensor contains either `inf`, `nan` or element < 0\n",
                matrix)
    assert found.category == Category.NUMERICS and "bfloat16" in said(found)


def test_a_gtx_1660ti_written_together_is_a_gtx_16(matrix: Matrix) -> None:
    found = top("The portrait part shows black blocks\nGPU: NVIDIA GeForce GTX 1660Ti\n", matrix)
    assert found.category == Category.NUMERICS and "full precision" in said(found)


def test_a_linker_that_cannot_write_the_extension(matrix: Matrix) -> None:
    found = top('LINK : fatal error LNK1104: cannot open file "nvdiffrast_plugin.pyd"\n', matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "torch_extensions" in said(found)


def test_an_amd_cpu_is_not_an_amd_gpu(matrix: Matrix) -> None:
    result = triage("CPU: AMD Ryzen 9 5950X\nRequires: filelock, nvidia-cublas-cu12, "
                    "nvidia-cuda-runtime-cu12\nRuntimeError: CUDA error: an illegal memory access\n",
                    matrix)
    assert all(d.category != Category.ROCM for d in result.diagnosis)


def test_a_cuda_that_knew_the_gpus_major_runs_it(matrix: Matrix) -> None:
    result = triage("torch 2.0.1+cu117\nNVIDIA GeForce RTX 4090\nRuntimeError: cuDNN error: "
                    "CUDNN_STATUS_EXECUTION_FAILED\n", matrix)
    assert all("predates" not in d.message for d in result.diagnosis)


_FBGEMM = ('OSError: [WinError 126] The specified module could not be found. Error loading '
           '"C:\\env\\Lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.\n')


# a DLL torch 2.4.0's wheel links and does not ship: a library not installed
def test_torch_240s_fbgemm_on_windows(matrix: Matrix) -> None:
    found = top("Successfully installed torch-2.4.0+cu121\n" + _FBGEMM, matrix)
    assert found.category == Category.NOT_INSTALLED and "2.4.1" in said(found)


def test_another_torchs_dll_missing_is_the_vc_runtime(matrix: Matrix) -> None:
    found = top("Successfully installed torch-2.5.1+cu121\n" + _FBGEMM, matrix)
    assert found.category == Category.NOT_INSTALLED and "vc_redist" in said(found)


def test_float32_results_differing_on_ampere_are_tf32(matrix: Matrix) -> None:
    found = top("The computation results on RTX 3090 are totally different from others\nRTX 3090 + "
                "PyTorch 1.8.1 with CUDA 11.1\nGTX 1080 Ti + PyTorch 1.8.1 gives the CPU's values\n",
                matrix)
    assert found.category == Category.NUMERICS and "allow_tf32 = False" in said(found)


@pytest.mark.parametrize("text", [
    "The results on my GTX 1080 Ti are totally different from the CPU's\n",
    "fp16 results on my RTX 3090 are totally different from the CPU's\n",
])
def test_differences_tf32_cannot_explain(text: str, matrix: Matrix) -> None:
    result = triage(text, matrix)
    assert all("TF32" not in d.message for d in result.diagnosis)


def test_an_error_with_mismatch_on_ampere_is_not_tf32(matrix: Matrix) -> None:
    result = triage("GPU 0: NVIDIA GeForce RTX 3090\nRuntimeError: The detected CUDA version (12.1) "
                    "mismatches the version that was used to compile PyTorch (11.8). Please make "
                    "sure to use the same CUDA versions.\n", matrix)
    assert all("TF32" not in d.message for d in result.diagnosis)
