"""torch's older FP8 matmul check on Ada; builds that take hours (the arch list too); a compiled
module at site-packages' top level owned by its importer; a CUDA build on a Mac; the driver
library not being the kernel module's (error 803); an arch table that predates the GPU; vLLM's
bf16 refusal by its last line; CUDA 13 builds on GPUs below sm_75."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.install.torch import torch_index
from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_the_old_scaled_mm_wording_on_ada_asks_for_a_newer_torch(matrix: Matrix) -> None:
    text = ("RuntimeError: torch._scaled_mm is only supported on devices with compute capability "
            ">= 9.0)\nGPU: RTX 4090, torch 2.2.1+cu121\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert 'install "torch>=2.3.0" --extra-index-url' in said(found)
    assert "cu121" in said(found)


def test_the_current_wording_below_ada_is_the_gpu_lacking_fp8(matrix: Matrix) -> None:
    text = ("RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute "
            "capability >= 9.0 or 8.9, or ROCm MI300+\nmy GPU is an RTX 3090\n")
    found = top(text, matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "torch>=" not in said(found)


def test_a_build_of_hours_bounds_jobs_and_compiles_only_the_gpus_arch(matrix: Matrix) -> None:
    text = ("Building flash-attn from source on our 4xH100 node takes nearly 3 hours\n"
            "pip install flash-attn --no-build-isolation\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_RESOURCES
    assert "FLASH_ATTN_CUDA_ARCHS=90 " in said(found) and "MAX_JOBS=" in said(found)


def test_a_count_glued_to_a_gpu_name_is_read_but_not_hex(matrix: Matrix) -> None:
    assert "H100" in str(top("8xH100s: build takes 2 hours for flash-attn\n", matrix).evidence)
    found = triage("pointer 0xA100 failed\n", matrix).diagnosis
    assert all("A100" not in str(d.evidence.get("quoted")) for d in found)


def test_a_top_level_extension_belongs_to_the_package_importing_it(matrix: Matrix) -> None:
    text = ('  File "/opt/venv/lib/python3.11/site-packages/auto_gptq/utils/exllama_utils.py", '
            'line 17, in exllama_set_max_input_length\n'
            "    from exllama_kernels import prepare_buffers\n"
            "ImportError: /opt/venv/lib/python3.11/site-packages/exllama_kernels.cpython-311-"
            "x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    found = top(text, matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH and found.message.startswith("auto-gptq")
    summaries = [r.summary for r in found.remedies]
    assert not any("the package" in s for s in summaries)  # the catalog's generic words folded
    assert len(summaries) == len(set(summaries))


def test_a_cuda_build_on_a_mac_is_the_platform_whatever_the_package(matrix: Matrix) -> None:
    text = ("Build fails on my MacBook Pro M3\n"
            "CMake Error at CMakeLists.txt:12 (message):\n  Neither CUDA nor HIP found\n")
    found = top(text, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert "Linux" in said(found) and "flash-attention" not in found.message


def test_error_803_is_a_driver_library_mismatch_with_the_compat_library_named(
        matrix: Matrix) -> None:
    text = ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 803: system has "
            "unsupported display driver / cuda driver combination\n")
    found = top(text, matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert "cuda-compat" in said(found) and "cat /proc/driver/nvidia/version" in found.remedies[0].commands


def test_torchs_arch_list_not_knowing_the_gpu_builds_for_a_compatible_arch(matrix: Matrix) -> None:
    text = ("I'm trying to build mypkg with CUDA on a GB10\n"
            "ValueError: Unknown CUDA arch (12.1) or GPU not supported\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "mypkg" in said(found)
    assert "export TORCH_CUDA_ARCH_LIST=12.0" in found.remedies[0].commands


def test_cmakes_arch_table_not_knowing_the_gpu_falls_back_to_ptx_of_an_older_major(
        matrix: Matrix) -> None:
    text = "CMake Error: Unknown CUDA Architecture Name 9.0 in CUDA_SELECT_NVCC_ARCH_FLAGS\n"
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "CUDA_SELECT_NVCC_ARCH_FLAGS" in found.message
    assert found.remedies[0].commands == ['export TORCH_CUDA_ARCH_LIST=8.6+PTX']


def test_vllms_bf16_refusal_by_its_last_line_alone(matrix: Matrix) -> None:
    text = ("llamafactory-cli api examples/inference/qwen_vllm.yaml\n"
            "You can use float16 instead by explicitly setting the`dtype` flag in CLI, for "
            "example: --dtype=half\n")
    found = top(text, matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "--dtype half" in said(found) and "infer_dtype: float16" in said(found)


def test_a_cuda_13_image_on_a_volta_gpu_has_no_code_for_it(matrix: Matrix) -> None:
    text = ("The cuda13 image fails to load any model on my Tesla V100; the cuda12 one works.\n"
            "error loading backend\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "CUDA 12" in said(found)


def test_nvidia_smis_cuda_13_is_the_driver_not_a_build(matrix: Matrix) -> None:
    text = ("| NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: 13.0 |\n"
            "Tesla V100 error: something failed\n")
    found = triage(text, matrix).diagnosis
    assert all(d.subject != "cuda13_old_gpu" and "CUDA 13 compiles nothing" not in d.message
               for d in found)


def test_tei_built_for_another_compute_cap_names_the_image_for_this_gpu(matrix: Matrix) -> None:
    text = ("Error: Could not create backend\nCaused by:\n    Could not start backend: Runtime "
            "compute cap 89 is not compatible with compile time compute cap 80\n")
    found = top(text, matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "text-embeddings-inference:89-<version>" in said(found)
    assert "CUDA_COMPUTE_CAP=89" in said(found)


def test_tei_on_a_gpu_it_has_no_build_for_is_unsupported(matrix: Matrix) -> None:
    text = ("Could not start backend: Runtime compute cap 70 is not compatible with compile time "
            "compute cap 80\n")
    assert top(text, matrix).category == Category.GPU_UNSUPPORTED


def test_tei_nulls_on_turing_turn_its_flash_attention_off(matrix: Matrix) -> None:
    text = ("docker run --gpus all ghcr.io/huggingface/text-embeddings-inference:turing-0.3.0 "
            "--model-id BAAI/bge-small-en-v1.5\n/embed returns [[null, null, null]] for some inputs\n")
    found = top(text, matrix)
    assert found.category == Category.NUMERICS
    assert found.remedies[0].commands == ["export USE_FLASH_ATTENTION=False"]


def test_inductor_skipping_bf16_on_turing_says_fp16_or_no_compile(matrix: Matrix) -> None:
    text = ("UserWarning: NVIDIA GeForce RTX 2080 Ti does not support bfloat16 compilation "
            "natively, skipping\n")
    found = top(text, matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "float16" in said(found) and "without compilation" in said(found)


def test_a_name_torch_lacks_asks_for_a_newer_torch_keeping_its_cuda_index(matrix: Matrix) -> None:
    text = ("torch 2.1.2+cu121\nImportError: cannot import name 'return_and_correct_aliasing' "
            "from 'torch.utils._python_dispatch'\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert found.remedies[0].summary.startswith("Upgrade torch to a release that defines "
                                                "return_and_correct_aliasing")
    assert found.remedies[0].commands[0].endswith(f"--extra-index-url {torch_index('cu121')}")


def test_a_torch_release_named_bare_as_a_requirement_is_a_floor(matrix: Matrix) -> None:
    text = ("allow_fp16_accumulation is not available in this version of torch, requires torch "
            "2.7.0 nightly currently\ntorch 2.6.0+cu126\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "torch>=2.7.0" in said(found)


def test_tritons_own_compiler_assert_is_its_release_not_the_gpu(matrix: Matrix) -> None:
    text = ("python: /project/lib/Analysis/Allocation.cpp:43: std::pair<...> mlir::triton::"
            "getCvtOrder(mlir::Attribute, mlir::Attribute): Assertion `!(srcMmaLayout && "
            "dstMmaLayout && !srcMmaLayout.isAmpere()) && \"mma -> mma layout conversion is only "
            "supported on Ampere\"' failed.\ntriton: 3.0.0\nGPU: H100\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "Triton 3.0.0" in found.message
    assert "num_warps" in said(found)


def test_tei_refusing_a_cap_it_was_built_for_is_a_release_older_than_the_gpu(
        matrix: Matrix) -> None:
    text = ("Could not start backend: Runtime compute cap 120 is not compatible with compile time "
            "compute cap 120\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "predates the GPU" in found.message
    assert "Upgrade TEI" in said(found) and "120-<version>" in said(found)


def test_triton_pinned_on_windows_offers_triton_windows_of_that_minor(matrix: Matrix) -> None:
    text = ("ERROR: Could not find a version that satisfies the requirement triton==3.4.0 (from "
            "versions: none)\nI ran pip install -r requirements.txt in PowerShell\n")
    found = top(text, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert found.remedies[0].commands == ['python -m pip install "triton-windows<3.5"']


def test_triton_2_on_windows_has_no_windows_build_at_all(matrix: Matrix) -> None:
    text = "triton==2.0.0 is not available on windows, pip fails on my Windows 11 machine\n"
    found = top(text, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert "triton-windows starts at 3.1" in said(found) and "triton-windows<" not in said(found)


def test_the_runtimes_error_name_is_no_kernel_image_joined_with_the_torch_build(
        matrix: Matrix) -> None:
    text = ("every CUDA op fails with `cudaErrorNoKernelImageForDevice` on the Tesla P100\n"
            "- `torch 2.10.0+cu128`\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "cu126" in said(found)


def test_a_title_quoting_a_capability_floor_above_the_named_gpu(matrix: Matrix) -> None:
    text = ("punica LoRA kernels require compute capability >= 8.0\n\nbenchmarking multi-LoRA on "
            "a V100\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "8.0" in found.message


def test_transformer_engine_without_its_pytorch_extra(matrix: Matrix) -> None:
    text = ("AttributeError: module 'transformer_engine' has no attribute 'pytorch'\n"
            "transformer_engine==1.13.0\n")
    found = top(text, matrix)
    assert found.category == Category.NOT_INSTALLED
    assert found.remedies[0].commands == [
        'python -m pip install --no-build-isolation "transformer_engine[pytorch]==1.13"']


def test_torchs_range_warning_past_the_maximum_in_the_same_major_is_harmless(
        matrix: Matrix) -> None:
    text = ("Found GPU0 NVIDIA GB10 which is of cuda capability 12.1. Minimum and Maximum cuda "
            "capability supported by this version of PyTorch is (8.0) - (12.0)\n")
    found = top(text, matrix)
    assert found.category == Category.INFO and "harmless" in found.message
    below = ("Found GPU0 Tesla P100 which is of cuda capability 6.0. Minimum and Maximum cuda "
             "capability supported by this version of PyTorch is (7.0) - (9.0)\n")
    assert top(below, matrix).category != Category.INFO


def test_an_sdpa_keyword_the_installed_torch_lacks_names_its_first_release(matrix: Matrix) -> None:
    text = ("torch 2.4.0+cu121\nTypeError: scaled_dot_product_attention() got an unexpected "
            "keyword argument 'enable_gqa'\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "from 2.5 on" in found.message
    assert '"torch>=2.5" --extra-index-url' in said(found)


def test_a_ptx_toolchain_error_with_a_driver_branch_names_the_next_cudas_driver(
        matrix: Matrix) -> None:
    text = ("host running nvidia-driver-570 with a GTX 1080 Ti\n"
            "CUDA error: the provided PTX was compiled with an unsupported toolchain.\n")
    found = top(text, matrix)
    assert found.category == Category.DRIVER_TOO_OLD
    assert "driver 570 runs CUDA 12.8 and older; CUDA 12.9 needs 575.51.03 or newer" in said(found)


def test_the_range_warning_wrapped_over_lines_is_read_whole(matrix: Matrix) -> None:
    text = ("UserWarning:\n    Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\n"
            "    Minimum and Maximum cuda capability supported by this version of PyTorch is\n"
            "    (8.0) - (12.0)\n")
    assert top(text, matrix).category == Category.INFO


def test_a_framework_floor_outranks_the_bf16_refusal_beside_it(matrix: Matrix) -> None:
    text = ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
            "Tesla P100-PCIE-16GB GPU has compute capability 6.0.\n"
            "RuntimeError: GPUs with compute capability below 7.0 are not supported.\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "7.0" in found.message


def test_a_cuda_error_with_only_an_intel_gpu_named_is_no_nvidia_gpu(matrix: Matrix) -> None:
    text = ("Error CUDA driver version is insufficient for CUDA runtime version at line 167\n"
            "I'm using an integrated Intel GPU (Iris Xe Graphics), torch==2.0.0+cu118\n")
    found = top(text, matrix)
    assert found.category == Category.NO_GPU and "NVIDIA GPU" in said(found)
    with_nvidia = text + "and a GeForce RTX 3060 Laptop GPU\n"
    assert top(with_nvidia, matrix).category != Category.NO_GPU


def test_nvcc_without_an_arch_names_torchs_variable_for_other_packages(matrix: Matrix) -> None:
    text = ("installing Uni-Core on an A100\nnvcc fatal   : Unsupported gpu architecture "
            "'compute_90'\nninja: build stopped: subcommand failed.\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert found.remedies[0].commands == ["export TORCH_CUDA_ARCH_LIST=8.0"]


def test_a_missing_cuda_runtime_under_a_vllm_import_is_vllms_wheel(matrix: Matrix) -> None:
    text = ("ImportError: libcudart.so.12: cannot open shared object file: No such file or "
            "directory\n\n    from vllm import LLM as VLLModel\n")
    found = top(text, matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH and found.message.startswith("vllm")
    assert "flash-attn" not in said(found)


def test_a_geforce_series_written_as_such_has_that_series_capability(matrix: Matrix) -> None:
    text = ("RTX 50XX with xformers-0.0.31\nCUDA error (/__w/xformers/xformers/third_party/"
            "flash-attention/hopper/flash_fwd_launch_template.h:188): invalid argument\n")
    found = top(text, matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "sm_120" in found.message
    assert "xformers" in said(found)


def test_the_older_torchs_mps_bf16_refusal_is_the_dtype(matrix: Matrix) -> None:
    text = "MacBook Pro M1\nTypeError: BFloat16 is not supported on MPS\n"
    found = top(text, matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "float16" in said(found)


def test_a_launcher_named_near_a_missing_runtime_is_not_its_owner(matrix: Matrix) -> None:
    text = ("ImportError: libcudart.so.11.0: cannot open shared object file: No such file or "
            "directory\n(venv) root@host:/workspace# deepspeed --num_gpus=1 train.py\n")
    found = top(text, matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert not found.message.startswith("deepspeed")


def test_a_framework_saying_flash_attn_is_broken_on_blackwell_is_its_missing_kernels(
        matrix: Matrix) -> None:
    text = ("Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\n"
            "Unsloth: Your Flash Attention 2 installation seems to be broken?\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "sm_121" in said(found)
