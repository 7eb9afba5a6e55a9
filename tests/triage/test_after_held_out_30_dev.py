"""Mechanisms the development half of held_out_30 pointed at, each generic: Triton's older fp8
floor assert, its bundled CUDA 12 ptxas against an older driver, and its shared-memory limit
printed in other words or for a GPU other than the one named."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_tritons_older_fp8e4nv_assert_is_its_fp8_floor(matrix: Matrix) -> None:
    found = top("AssertionError: fp8e4nv data type is not supported on CUDA arch < 89\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "sm_89" in found.message
    assert "float8_e5m2" in said(found)


def test_an_invalid_image_from_triton_under_cuda_11_is_its_ptxas(matrix: Matrix) -> None:
    found = top("I built triton from source. V100, cuda 11.7.\nRuntimeError: device kernel image "
                "is invalid\n", matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "ptxas" in found.message
    assert "TRITON_PTXAS_PATH" in said(found)


def test_an_invalid_image_from_triton_under_cuda_12_is_not_blamed_on_ptxas(matrix: Matrix) -> None:
    found = top("triton, cuda 12.4\nRuntimeError: Triton Error [CUDA]: device kernel image is "
                "invalid\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "TRITON_CACHE_DIR" in said(found)


def test_shared_memory_in_other_words(matrix: Matrix) -> None:
    found = top("RTX3090 24G\n`triton.runtime.errors.OutOfResources: out of resource: shared "
                "memory, Required: 163842, Hardware limitation: 101376.`\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "num_stages" in said(found)


def test_a_limit_that_is_not_the_named_gpus_is_not_its(matrix: Matrix) -> None:
    found = top("Training on A100 is ok. Inference on K80 fails:\n\"triton.code_gen."
                "OutOfResources: out of resource: shared memoryRequired: 65536Hardware limit: "
                "49152\"\n", matrix)
    assert "A100 (sm_80) has 49152" not in found.message and "this GPU has 49152" in found.message


def test_the_trainer_start_up_line_with_the_cpu_is_a_cpu_torch(matrix: Matrix) -> None:
    found = top("centos7, 8 A100\n[INFO|parser.py:242] >> Process rank: 0, device: cpu, n_gpu: 0, "
                "distributed training: False\n", matrix)
    assert found.category == Category.TORCH_CPU_ONLY and "--index-url" in said(found)


_KERNELS = ("ValueError: Kernels are not available. Please install a compatible version (0.15.2 <= "
            "version < 0.16.0), e.g. `pip install kernels==0.15.2`\n")


def test_the_kernels_range_transformers_prints_is_the_remedy(matrix: Matrix) -> None:
    found = top(_KERNELS, matrix)
    assert 'kernels>=0.15.2,<0.16.0' in said(found)


def test_a_stated_kernels_outside_the_range_is_a_conflict_with_the_releases_that_accept_it(
        matrix: Matrix) -> None:
    found = top(_KERNELS + "kernels==0.16.0\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "Or keep kernels 0.16.0 and move transformers" in said(found)


def test_a_gpu_no_listed_torch_carries_gets_the_source_build(matrix: Matrix) -> None:
    found = top("Found GPU0 NVIDIA GTX TITAN Black which is of cuda capability 3.5. PyTorch no "
                "longer supports this GPU because it is too old.\n", matrix)
    oldest = min(matrix.torch_releases, key=lambda rel: tuple(map(int, rel.minor.split("."))))
    assert found.category == Category.GPU_UNSUPPORTED
    assert f"No torch release from {oldest.minor} on ships kernels for sm_35" in said(found)
    assert 'TORCH_CUDA_ARCH_LIST="3.5"' in said(found)


def test_a_torch_older_than_the_matrix_is_upgraded_to_one_with_the_gpus_code(
        matrix: Matrix) -> None:
    found = top("RuntimeError: CUDA error: no kernel image is available for execution on the "
                "device, when use pytorch 1.7 on linux with RTX 3090\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE
    assert "torch 1.7 predates" in said(found) and "--index-url" in said(found)


def test_torchs_own_library_missing_a_c10_symbol_is_two_torches(matrix: Matrix) -> None:
    found = top(">>> import torch\nImportError: ~/.local/lib/python3.6/site-packages/torch/lib/"
                "libcaffe2.so: undefined symbol: _ZTIN3c1010TensorImplE\n", matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH and "torch's own" in found.message
    assert "pip uninstall -y torch" in said(found) and "ldconfig -p" in said(found)
    assert "pip install --no-cache-dir torch" not in said(found)


def test_a_cuda_error_at_a_kernel_source_names_its_project(matrix: Matrix) -> None:
    found = top("Device: cuda:0 NVIDIA GeForce RTX 2080 Ti\nerror: CUDA error: no kernel image is "
                "available for execution on the device (at D:\\Project\\nunchaku-dev\\src\\kernels"
                "\\awq\\gemv_awq.cu:313)\nxformers version: 0.0.29.post3\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "upgrade nunchaku" in said(found)


_DYNAMO = ("from user code:\n   File \"/e/site-packages/torch/_dynamo/external_utils.py\", line 40, "
           "in inner\n    return fn(*args, **kwargs)\n  File \"/e/site-packages/transformers/models/"
           "llama/modeling_llama.py\", line 992, in _update_causal_mask\n    if attention_mask is "
           "not None and 0.0 in attention_mask:\n")


def test_dynamo_stopping_in_a_models_mask_code_is_a_graph_break_there(matrix: Matrix) -> None:
    found = top("Torch.compile fail during inference\n[...]\n" + _DYNAMO, matrix)
    assert found.category == Category.COMPILE_GRAPH_BREAK and "model's own code" in found.message
    assert 'attn_implementation="sdpa"' in said(found)


def test_dynamo_stopping_in_flash_attn_is_not_the_models_code(matrix: Matrix) -> None:
    text = _DYNAMO.replace("transformers/models/llama/modeling_llama.py", "flash_attn/x.py")
    assert all("model's own code" not in d.message for d in triage(text, matrix).diagnosis)


def test_a_package_not_supporting_an_argument_is_not_a_torch_question(matrix: Matrix) -> None:
    text = ("PyTorch version 2.5.1+cu124 available.\nThe associated vLLM version (0.7.3) doesn't "
            "support a worker_extension_cls keyword argument during initialization.\n")
    assert all("release's wheels require one torch" not in d.message
               for d in triage(text, matrix).diagnosis)


def test_no_kernel_image_with_the_gpu_but_no_package_names_the_arch_list(matrix: Matrix) -> None:
    found = top("Tesla T4\nRuntimeError: CUDA error: no kernel image is available for execution "
                "on the device\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE
    assert "TORCH_CUDA_ARCH_LIST=\"7.5\"" in said(found)


def test_no_hip_gpus_is_a_rocm_install_that_finds_no_gpu(matrix: Matrix) -> None:
    found = top("RuntimeError: No HIP GPUs are available on Linux Mint 22 and rx 6600\n", matrix)
    assert found.category == Category.ROCM and "amdgpu-install" in said(found)


def test_a_rocm_triton_attention_kernel_over_the_stack_limit(matrix: Matrix) -> None:
    found = top("vllm serve on MI60 (gfx906), ROCm 6.2\nerror: triton_flash_attention.py:211:0: "
                "stack frame size (164332) exceeds limit (131056) in function 'attn_fwd_0d1d2d3'\n",
                matrix)
    assert found.category == Category.ROCM and "VLLM_USE_TRITON_FLASH_ATTN=0" in said(found)


def test_frames_in_the_cloned_checkout_after_installing_its_build_shadow_it(
        matrix: Matrix) -> None:
    found = top("git clone https://github.com/NVIDIA/TransformerEngine.git\ncd TransformerEngine\n"
                "python setup.py bdist_wheel\npip install dist/transformer_engine-1.8.0-cp310-"
                "cp310-linux_x86_64.whl\nTraceback (most recent call last):\n  File \"/home/v/"
                "TransformerEngine/transformer_engine/common/__init__.py\", line 40, in "
                "_load_library\nAssertionError: Could not find libtransformer_engine.so\n",
                matrix)
    assert found.category == Category.NOT_INSTALLED and "checkout" in found.message
    assert "change out of TransformerEngine" in said(found)


def test_an_editable_install_or_a_test_failure_in_a_checkout_is_not_a_shadow(
        matrix: Matrix) -> None:
    editable = ("git clone https://github.com/x/proj.git\ncd proj\npip install -e .\nTraceback "
                "(most recent call last):\n  File \"/home/v/proj/proj/__init__.py\", line 3, in "
                "<module>\nImportError: cannot import name 'x'\n")
    tests = ("git clone --depth 1 https://github.com/Dao-AILab/flash-attention\ncd "
             "flash-attention/hopper\npython setup.py install\nTraceback (most recent call "
             "last):\n  File \"/w/flash-attention/hopper/test_flash_attn.py\", line 9, in test\n"
             "AssertionError: mismatch\n")
    for text in (editable, tests):
        assert all(d.subject != "checkout_shadow" for d in triage(text, matrix).diagnosis)


def test_a_cpu_builds_stack_frame_warning_is_not_a_rocm_kernel(matrix: Matrix) -> None:
    text = ("attention.cpp:88: warning: stack frame size (164332) exceeds limit (131056) in "
            "function 'attn_fwd'\n")
    assert all(d.subject != "rocm_stack_frame" for d in triage(text, matrix).diagnosis)


def test_an_llvm_error_from_numba_beside_triton_is_not_tritons(matrix: Matrix) -> None:
    text = "triton 3.1.0\nLLVM ERROR: Symbol not found: __svml_cosf8_ha\n"
    assert all("inside its own compiler" not in d.message for d in triage(text, matrix).diagnosis)


def test_torchs_own_cuda_is_not_taken_for_the_drivers(matrix: Matrix) -> None:
    text = ("torch 2.1.0+cu118 (CUDA 11.8), triton\nRuntimeError: device kernel image is "
            "invalid\n")
    assert all("driver here (of CUDA" not in d.message for d in triage(text, matrix).diagnosis)


def test_a_stated_kernels_inside_the_range_is_no_conflict(matrix: Matrix) -> None:
    found = top(_KERNELS.replace("0.15.2 <=", "0.16.0 <=").replace("< 0.16.0", "< 0.17.0")
                + "kernels==0.16.1\n", matrix)
    assert found.category != Category.VERSION_CONFLICT
