"""Generic mechanisms and facts added in session 43: the lock file an interrupted JIT build
leaves, and GPUs written by names NVIDIA's compute-capability page does not list."""

from __future__ import annotations

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

_LOADER = ("Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
           "Emitting ninja build file /root/.cache/torch_extensions/py310_cu121/cpu_adam/"
           "build.ninja...\nLoading extension module cpu_adam...\n")


def test_a_hang_at_the_loader_names_its_lock_file(matrix: Matrix) -> None:
    found = top(_LOADER + "the training is stuck here forever, nothing happens\n", matrix)
    assert found.category == Category.BUILD_RESOURCES and "lock" in found.message
    assert "rm -f /root/.cache/torch_extensions/py310_cu121/cpu_adam/lock" in said(found)


def test_a_hang_told_in_prose_finds_the_root_through_torch(matrix: Matrix) -> None:
    found = top("The program gets stuck at compiling fused_kernels; deleting the build directory "
                "fixes it.\n", matrix)
    assert found.category == Category.BUILD_RESOURCES
    assert "get_default_build_root()" in said(found) and "fused_kernels/build" in said(found)


def test_the_loader_alone_is_no_hang(matrix: Matrix) -> None:
    found = top(_LOADER + "RuntimeError: CUDA error: no kernel image is available for execution "
                "on the device\n", matrix)
    assert "lock" not in found.message


@pytest.mark.parametrize("device, name, cc", [
    ("NVIDIA H800", "H800", "9.0"), ("NVIDIA H20", "H20", "9.0"),
    ("NVIDIA A800-SXM4-80GB", "A800", "8.0"), ("NVIDIA L20", "L20", "8.9"),
    ("NVIDIA A10G", "A10G", "8.6"), ("NVIDIA GeForce RTX 2050", "GeForce RTX 2050", "8.6"),
    ("Jetson Xavier NX", "Jetson Xavier NX", "7.2"),
])
def test_gpus_off_nvidias_page_give_their_capability(device: str, name: str, cc: str,
                                                     matrix: Matrix) -> None:
    found = top(f"GPU: {device}\nRuntimeError: FlashAttention only supports Ampere GPUs or "
                "newer.\n", matrix)
    assert f"on {name} (compute capability {cc})" in found.message


def test_a_torch_pin_of_a_variant_never_built_names_the_builds(matrix: Matrix) -> None:
    found = top("setup pins torch==2.6.0+cu121\nERROR: No matching distribution found for "
                "torch==2.6.0+cu121\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "cu118, cu124, cu126" in found.message
    assert "torch==2.6.0+cu124" in said(found)


def test_a_variant_the_release_has_is_no_finding(matrix: Matrix) -> None:
    result = triage("pip install torch==2.6.0+cu124\nERROR: No matching distribution found for "
                    "torch==2.6.0+cu124\n", matrix)
    assert not any("never built" in found.message for found in result.diagnosis)


def test_a_floor_with_its_architecture_named_between(matrix: Matrix) -> None:
    found = top("GPU: Tesla T4\nRuntimeError: GPU compute capability 8.0 (Ampere) or higher is "
                "required to install kernl\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "8.0" in found.message


def test_an_old_checkpointing_hook_under_transformers_435(matrix: Matrix) -> None:
    found = top("TypeError: BiEncoderModel.gradient_checkpointing_enable() got an unexpected "
                "keyword argument 'gradient_checkpointing_kwargs'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "4.35.0" in found.message
    assert "transformers==4.34.1" in said(found)


def test_diffusers_hooks_are_not_transformers_table(matrix: Matrix) -> None:
    result = triage('  File "/x/site-packages/diffusers/models/modeling_utils.py", line 1\n'
                    "TypeError: WanModel._set_gradient_checkpointing() got an unexpected keyword "
                    "argument 'enable'\n", matrix)
    assert not any("4.35.0" in found.message for found in result.diagnosis)


@pytest.mark.parametrize("shown, claimed", [
    ("", False),  # enable= alone is diffusers' signature too: no caller shown, no claim
    ('  File "/x/site-packages/transformers/modeling_utils.py", line 1\n', True),
])
def test_an_old_set_gradient_checkpointing_needs_transformers_shown(shown: str, claimed: bool,
                                                                    matrix: Matrix) -> None:
    result = triage(shown + "TypeError: WanModel._set_gradient_checkpointing() got an unexpected "
                    "keyword argument 'enable'\n", matrix)
    assert any("4.35.0" in found.message for found in result.diagnosis) is claimed


def test_nan_on_a_gtx16_card_without_black_images(matrix: Matrix) -> None:
    found = top("GPU: NVIDIA GeForce GTX 1660 6GB\nRuntimeError: NaN detected in latents\n",
                matrix)
    assert found.category == Category.NUMERICS and "GTX 16" in found.message
    assert "--mixed_precision no" in said(found)


def test_cuda_home_set_like_path(matrix: Matrix) -> None:
    found = top("unable to execute '/usr/local/cuda-10.0:/usr/local/cuda-10.0:/bin/nvcc': No such "
                "file or directory\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "list of directories" in found.message
    assert "export CUDA_HOME=/usr/local/cuda-10.0" in said(found)


def test_nvcc_without_cl_exe(matrix: Matrix) -> None:
    found = top("nvcc fatal   : Cannot find compiler 'cl.exe' in PATH\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "Native Tools" in said(found)


@pytest.mark.parametrize("text, word, fix", [
    ('CPU only, no GPU\nRuntimeError: "baddbmm__mkl" not implemented for \'Half\'\n', "float16",
     "float32"),
    ('RuntimeError: "LayerNormKernelImpl" not implemented for \'BFloat16\'\n', "bfloat16",
     "float16"),
])
def test_a_torch_kernel_without_the_dtype(text: str, word: str, fix: str,
                                          matrix: Matrix) -> None:
    found = top(text, matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and word in found.message
    assert f"torch_dtype=torch.{fix}" in said(found)


def test_a_conda_envs_own_libstdcxx(matrix: Matrix) -> None:
    found = top("ImportError: /home/u/anaconda3/envs/kt/bin/../lib/libstdc++.so.6: version "
                "`GLIBCXX_3.4.32' not found (required by /home/u/anaconda3/envs/kt/lib/python3.11/"
                "site-packages/KTransformersOps.cpython-311-x86_64-linux-gnu.so)\n", matrix)
    assert found.category == Category.GLIBC_TOO_OLD
    assert "conda install -p /home/u/anaconda3/envs/kt -c conda-forge libstdcxx-ng" in said(found)


def test_deepspeeds_loss_scale_floor(matrix: Matrix) -> None:
    found = top("Exception: Current loss scale already at minimum - cannot decrease scale "
                "anymore. Exiting run.\nGPU: 2x RTX 3090\n", matrix)
    assert found.category == Category.NUMERICS and '"bf16": {"enabled": true}' in said(found)


def test_a_float32_kernel_given_half(matrix: Matrix) -> None:
    found = top("RuntimeError: expected scalar type Float but found Half\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and ".float()" in said(found)


def test_a_companion_library_missing_names_its_package_not_flash_attn(matrix: Matrix) -> None:
    found = top("it prevents me from importing torchaudio\nOSError: libtorch_cuda_cpp.so: cannot "
                "open shared object file: No such file or directory\n", matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert found.message.startswith("torchaudio") and "flash-attn" not in said(found)


def test_comfys_async_allocator_on_a_gpu_without_memory_pools(matrix: Matrix) -> None:
    found = top("Is it possible to support --disable-cuda-malloc?\nRuntimeError: CUDA error: "
                "operation not supported\n", matrix)
    assert found.category == Category.KERNEL_FAILURE and "cudaMallocAsync" in found.message
    assert "--disable-cuda-malloc" in said(found)


def test_an_intel_python_under_rosetta(matrix: Matrix) -> None:
    found = top("MPSAccelerator can not run on your system since the accelerator is not "
                "available.\nmy M1 Pro reports platform i386\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "Rosetta" in found.message
    assert "platform.machine()" in said(found)


def test_bitsandbytes_quantizer_on_a_mac(matrix: Matrix) -> None:
    found = top("我的M3芯片本地运行int4模型报错 Using `bitsandbytes` 8-bit quantization requires "
                "Accelerate: `pip install accelerate`\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "GGUF" in said(found)


def test_a_rocm_library_of_another_release(matrix: Matrix) -> None:
    found = top("CUDA SETUP: Loading binary /v/lib/python3.10/site-packages/bitsandbytes/"
                "libbitsandbytes_hip_nohipblaslt.so...\nlibhipblas.so.0: cannot open shared "
                "object file: No such file or directory\n", matrix)
    assert found.category == Category.ROCM and found.message.startswith("bitsandbytes")
    assert "flash-attn" not in said(found)


@pytest.mark.parametrize("line, word", [
    ("deform_conv_cuda.cpp:417:3: error: \u2018AT_CHECK\u2019 was not declared in this scope",
     "AT_CHECK"),
    ("src/ball_query.cpp:2:10: fatal error: THC/THC.h: No such file or directory", "THC"),
    ("error: \u2018getCurrentCUDAStream\u2019 is not a member of \u2018at::cuda\u2019", "THC"),
    ("error: identifier \"THCState\" is undefined", "THC"),
])
def test_a_cpp_api_torch_removed(line: str, word: str, matrix: Matrix) -> None:
    found = top(line + "\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and word in found.message
    assert ("TORCH_CHECK" if word == "AT_CHECK" else "ATen/cuda/CUDAContext.h") in said(found)


def test_the_thc_shims_torch_kept_are_not_removed(matrix: Matrix) -> None:
    result = triage("fatal error: THC/THCAtomics.cuh: No such file or directory\n", matrix)
    assert not any("legacy CUDA library" in found.message for found in result.diagnosis)


def test_half_atomic_add_below_volta(matrix: Matrix) -> None:
    found = top("The atomic add doesn't work on compute 6.1\nquant_cuda_kernel.cu(548): error: no "
                "instance of overloaded function \"atomicAdd\" matches the argument list\n"
                "            argument types are: (__half *, __half)\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "7.0" in found.message
    # "doesn't work on compute 6.1" is neither a release that worked nor a package
    assert "compute==" not in said(found) and "pin it back" not in said(found)


@pytest.mark.parametrize("words", ["it works again with to 0.1.10", "went back to 11.8"])
def test_words_beside_a_version_are_no_package_to_pin(words: str, matrix: Matrix) -> None:
    result = triage(f"{words}\nRuntimeError: CUDA error: no kernel image is available for "
                    "execution on the device\n", matrix)
    assert not any("pin it back" in r.summary for found in result.diagnosis
                   for r in found.remedies)


def test_a_packages_dll_without_a_procedure_on_windows(matrix: Matrix) -> None:
    found = top("ImportError: DLL load failed while importing exllamav2_ext: The specified "
                "procedure could not be found.\nWith torch 2.1.2+cu121 and exllamav2 0.0.15\n",
                matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH and "exllamav2" in found.message
    assert "flash-attn" not in said(found)


def test_tinyccs_python_h_in_an_embedded_python(matrix: Matrix) -> None:
    found = top("C:\\ComfyUI_windows_portable\\python_embeded\\python.exe\ncuda_utils.c:14: error: "
                "include file 'Python.h' not found\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "python_embeded" in found.message


def test_pips_build_env_is_never_the_interpreter(matrix: Matrix) -> None:
    from fadoctor.install.into import named_in
    text = ('  File "/tmp/pip-build-env-wm8mya_7/overlay/lib/python3.9/site-packages/setuptools/'
            'x.py", line 1\n')
    assert named_in(text) is None
    assert named_in(text + '  File "/opt/env/lib/python3.9/site-packages/torch/x.py"\n') \
        .python == "/opt/env/bin/python"


def test_an_isolated_build_against_another_cuda_torch(matrix: Matrix) -> None:
    found = top("$ pip install -e .\n  Installing build dependencies ... done\n    setup.py with "
                "torch 1.12.0+cu102\n    /tmp/pip-build-env-wm8mya_7/overlay/lib/python3.9/"
                "site-packages/setuptools/command/easy_install.py:144: Warning\n$ "
                "torch.version.cuda\n'11.6'\n", matrix)
    assert found.category == Category.BUILD_ISOLATION and "--no-build-isolation" in said(found)
    assert "pip-build-env" not in said(found)


@pytest.mark.parametrize("name, category", [
    ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)", Category.DRIVER_TOO_OLD),
    ("CUDA_ERROR_NO_BINARY_FOR_GPU", Category.NO_KERNEL_IMAGE),
    ("CUDA_ERROR_NO_DEVICE", Category.NO_GPU),
])
def test_the_driver_apis_error_names(name: str, category: Category, matrix: Matrix) -> None:
    found = top(f"Error loading CUDA module: {name}\nDriver Version: 450.142.00\n", matrix)
    assert found.category == category
    if category == Category.DRIVER_TOO_OLD:
        assert "CUDA 11.0 or older" in said(found)


def test_a_cmake_build_killed_for_memory_gets_fewer_jobs(matrix: Matrix) -> None:
    found = top("While installing, it is using all available RAM (16GB), then all SWAP, and it is "
                "killed\nIt happens after calling `cmake --build build --config RelWithDebInfo "
                "-j 16`\n", matrix)
    assert found.category == Category.BUILD_RESOURCES
    assert "cmake --build build --config RelWithDebInfo -j 4" in said(found)


def test_a_container_that_does_not_see_a_new_drivers_gpu(matrix: Matrix) -> None:
    text = ("RuntimeError: CUDA failed with error CUDA driver version is insufficient for CUDA "
            "runtime version\nrunning it in a docker on my unraid server\nNvidia Driver Version: "
            "565.77\n")
    found = top(text, matrix)
    assert found.category == Category.NO_GPU and "--gpus all" in said(found)
    assert top(text + "image: cuda 13.0 runtime\n", matrix).category == Category.DRIVER_TOO_OLD


def test_a_packages_own_kernels_module_not_built(matrix: Matrix) -> None:
    found = top("ModuleNotFoundError: No module named 'slora._kernels'\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "slora._kernels" in found.message


def test_torchaudio_not_installed(matrix: Matrix) -> None:
    found = top('  File "/w/tortoise/read.py", line 5, in <module>\nModuleNotFoundError: No '
                "module named 'torchaudio'\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "together with torch" in said(found)


def test_cudnn8_on_windows_without_zlib(matrix: Matrix) -> None:
    found = top("Could not load library cudnn_cnn_infer64_8.dll. Error code 126\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "zlibwapi.dll" in said(found)


def test_named_symbol_not_found_on_the_oldest_gpu_named(matrix: Matrix) -> None:
    found = top("Issues running on `Titan RTX` (`A100` & `4090D` work)\n/home/u/.cache/"
                "cuequivariance-triton/x.json\nRuntimeError: CUDA error: \"named symbol not "
                "found\" at run_fmha.cu:160\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "cuequivariance" in said(found)
    # several GPUs named, one working: none is assumed to be the failing one
    assert "the GPU it fails on" in found.message and "TITAN RTX (sm_75)" in found.message
    one = top("GPU: NVIDIA GeForce RTX 3090\nRuntimeError: CUDA error: named symbol not found\n",
              matrix)
    assert "for GeForce RTX 3090 (sm_86)" in one.message and "sm_86" in said(one)


@pytest.mark.parametrize("line", ["see https://github.com/x/y/blob/main/a.py#L20",
                                  "lines L4-L20 of train.py"])
def test_a_source_line_is_no_gpu(line: str, matrix: Matrix) -> None:
    assert matrix.gpu(line) is None


def test_an_include_of_thc_in_source_is_no_error(matrix: Matrix) -> None:
    result = triage("my kernel.cu has\n#include <THC/THC.h>\nand it runs fine on torch 1.8\n",
                    matrix)
    assert not any("legacy CUDA library" in found.message for found in result.diagnosis)


def test_a_cuda_variant_package_owns_the_missing_runtime(matrix: Matrix) -> None:
    found = top("dgl                           1.0.2+cu102\nOSError: libcudart.so.11.0: cannot "
                "open shared object file: No such file or directory\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and found.message.startswith("dgl")
    assert "flash-attn" not in said(found)


def test_a_refused_wheels_python_is_not_the_environments(matrix: Matrix) -> None:
    found = top("1. Download python 3.10.0\nC:\\ComfyUI\\python_embeded\\python.exe -m pip "
                "install insightface-0.7.3-cp310-cp310-win_amd64.whl\nERROR: insightface-0.7.3-"
                "cp310-cp310-win_amd64.whl is not a supported wheel on this platform.\n", matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "runs Python 3.10" not in found.message and "not cp310" in said(found)
    assert "must be cp310" not in said(found)


@pytest.mark.parametrize("dtype, first", [("float8_e4m3fnuz", "2.2.0"), ("float8_e4m3fn", "2.1.0"),
                                          ("uint16", "2.3.0"), ("float4_e2m1fn_x2", "2.8.0")])
def test_a_torch_dtype_older_torch_lacks(dtype: str, first: str, matrix: Matrix) -> None:
    found = top(f"AttributeError: module 'torch' has no attribute '{dtype}'\nMy pytorch version is "
                "2.0.1+cu118\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and f"from {first} on" in found.message
    assert f"torch>={first}" in said(found)


@pytest.mark.parametrize("nvcc, dropped", [("11.1", True), ("10.2", False)])
def test_an_arch_the_toolkit_dropped(nvcc: str, dropped: bool, matrix: Matrix) -> None:
    found = top(f"Cuda compilation tools, release {nvcc}, V{nvcc}.105\nGPU: RTX 3090\nnvcc fatal   "
                ": Unsupported gpu architecture 'compute_30'\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert ("no longer compile" in found.message) is dropped
    if dropped:
        assert "CMakeLists.txt" in said(found) and "TORCH_CUDA_ARCH_LIST=8.6" in said(found)


def test_a_windows_lock_file_is_removed_by_python_not_rm(matrix: Matrix) -> None:
    found = top("Using C:\\Users\\me\\AppData\\Local\\torch_extensions\\torch_extensions\\Cache\\"
                "py310_cu121 as PyTorch extensions root...\nLoading extension module cpu_adam...\n"
                "it hangs forever here\n", matrix)
    assert found.category == Category.BUILD_RESOURCES
    assert "os.remove" in said(found) and "rm -f" not in said(found)
    assert 'py310_cu121\\cpu_adam\\lock"' in said(found)
    assert "os.remove(sys.argv[1])" in said(found)
