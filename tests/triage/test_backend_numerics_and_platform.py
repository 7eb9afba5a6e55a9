"""NaN or corrupted output tied to SageAttention, SDPA's cuDNN backend or xFormers; torch without
NCCL (Windows, macOS, CPU builds); DeepSpeed's op builder refusing a CUDA major mismatch; ROCm
torch without the GPU's target; an API-shaped error between two packages."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_sage_black_images_name_the_fp16_kernel_and_the_switch(matrix: Matrix) -> None:
    text = ("RTX 5090 producing black images with Sage Attention\n"
            "processing.py:974: RuntimeWarning: invalid value encountered in cast\n"
            "sage: 2.2.0+cu128torch2.8.0  torch: 2.8.0+cu129\n")
    found = top(text, matrix)
    assert found.category == Category.NUMERICS
    assert "sageattn_qk_int8_pv_fp16_cuda" in said(found) and "--disable-sage" in said(found)
    assert "RTX 5090" in str(found.evidence["quoted"])


def test_cudnn_sdpa_nan_disables_that_backend(matrix: Matrix) -> None:
    text = ("DPO training goes NaN with the default SDPA backend on torch 2.13 (cuDNN attention)\n"
            "grad_norm turns NaN after 60 steps\n")
    found = top(text, matrix)
    assert found.category == Category.NUMERICS
    assert "enable_cudnn_sdp(False)" in said(found)


def test_xformers_listed_far_from_the_nan_is_not_blamed(matrix: Matrix) -> None:
    listing = "xformers 0.0.28\n" + "".join(f"package{i} 1.0\n" for i in range(10))
    text = listing + "loss becomes nan after 100 steps with flash_attn\n"
    result = top(text, matrix)
    assert "xFormers" not in result.message
    near = top("xformers makes the loss nan after 100 steps\ntorch 2.4.0+cu121\n", matrix)
    assert near.category == Category.NUMERICS and "xformers==0.0.27.post2" in said(near)


def test_no_nccl_on_windows_says_gloo_or_linux(matrix: Matrix) -> None:
    text = ("  File \"C:\\Users\\me\\llama3\\example.py\", line 9, in <module>\n"
            "RuntimeError: Distributed package doesn't have NCCL built in\n")
    found = top(text, matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED and "Windows" in found.message
    assert 'backend="gloo"' in said(found) and "WSL2" in said(found)


def test_no_nccl_in_a_cpu_torch_asks_for_a_cuda_build(matrix: Matrix) -> None:
    text = ("torch 2.5.1+cpu\nRuntimeError: Distributed package doesn't have NCCL built in\n")
    found = top(text, matrix)
    assert found.category == Category.TORCH_CPU_ONLY and "gloo" in said(found)


def test_deepspeed_cuda_major_mismatch(matrix: Matrix) -> None:
    text = ("deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: "
            "Installed CUDA version 12.2 does not match the version torch was compiled with 11.7, "
            "unable to compile cuda/cpp extensions without a matching cuda version.\n")
    found = top(text, matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH  # the toolkit against torch's CUDA
    assert "/usr/local/cuda-11.7" in said(found) and "DS_SKIP_CUDA_CHECK=1" in said(found)
    assert "cu12" in said(found)  # a torch for the installed toolkit's major


def test_deepspeeds_accepted_minor_mismatch_is_no_finding(matrix: Matrix) -> None:
    text = ("Installed CUDA version 12.6 does not match the version torch was compiled with 12.4 "
            "but since the APIs are compatible, accepting this combination\n")
    result = top(text + "RuntimeError: Distributed package doesn't have NCCL built in\n", matrix)
    assert result.category != Category.BUILD_TOOLCHAIN


def test_rocm_torch_without_the_gpus_target_names_the_override(matrix: Matrix) -> None:
    text = ("torch.AcceleratorError: HIP error: invalid device function\n"
            "[pip3] torch==2.10.0.dev20250929+rocm7.0\nGPU: gfx1151 (Strix Halo)\n")
    found = top(text, matrix)
    assert found.category == Category.ROCM
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in said(found) and "gfx1151" in found.message
    unnamed = top("\"hipErrorNoBinaryForGpu: Unable to find code object for all current "
                  "devices!\"\n", matrix)
    assert "10.3.0" in said(unnamed) and "rocminfo" in said(unnamed)
    windows = top("C:\\comfy> python main.py\nHIP error: invalid device function\ngfx1103\n",
                  matrix)
    assert "HSA_OVERRIDE_GFX_VERSION=" not in " ".join(
        c for r in windows.remedies for c in r.commands)


def test_a_hip_error_with_flash_attn_stays_with_its_ck_backend(matrix: Matrix) -> None:
    text = ("import flash_attn\nHIP error: invalid device function\ngfx1100\n")
    found = top(text, matrix)
    assert found.category == Category.ROCM and "Composable Kernel" in found.message


def test_an_api_shaped_error_between_two_packages_is_a_version_skew(matrix: Matrix) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/opt/conda/lib/python3.10/site-packages/transformers/models/qwen2_vl/'
            'modeling_qwen2_vl.py", line 1720, in forward\n'
            "    outputs = self.model(\n"
            "TypeError: lce_forward() got an unexpected keyword argument 'cache_position'\n"
            "transformers 4.47.0\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "Upgrade transformers" in said(found)
    assert "downgrade transformers to the release before 4.47.0" in said(found)


def test_a_traceback_without_its_header_still_names_the_caller(matrix: Matrix) -> None:
    text = ('File "/usr/local/lib/python3.10/dist-packages/stripedhyena/model.py", line 16\n'
            "    from flash_attn.modules.mha import MHA\n"
            '  File "/usr/local/lib/python3.10/dist-packages/flash_attn-2.7.4.post1-py3.10-'
            'linux-x86_64.egg/flash_attn/modules/mha.py", line 28, in <module>\n'
            "ValueError: too many values to unpack (expected 2)\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "upgrade flash-attn" in said(found)


def test_a_shape_error_in_the_users_own_code_is_not_blamed_on_packages(matrix: Matrix) -> None:
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
            "TypeError: main() got an unexpected keyword argument 'lr'\n")
    result = triage(text, matrix)
    assert all(d.category != Category.VERSION_CONFLICT for d in result.diagnosis)


def test_a_triton_before_33_on_blackwell_has_no_ptxas_for_it(matrix: Matrix) -> None:
    found = top("Triton version: 3.2.0\nNVIDIA GeForce RTX 5090\ntorch 2.6.0+cu126\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "3.3.0" in found.message
    assert "cu128" in said(found)
    windows = top("C:\\ComfyUI> pip list\ntriton-windows 3.2.0.post18\nRTX 5090\n", matrix)
    assert "triton-windows<3.4" in said(windows)
    newer = triage("Triton version: 3.3.1\nNVIDIA GeForce RTX 5090\n", matrix)
    assert all("ptxas" not in d.message for d in newer.diagnosis)


def test_cudnn_without_a_plan_for_the_graph_turns_its_backend_off(matrix: Matrix) -> None:
    text = ("scaled_dot_product_attention fails on Ampere arch with head_dim > 128\n"
            "q = torch.randn(1, 8, 1024, 256) # head_dim 256\n"
            "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans "
            "support the graph.\n")
    found = top(text, matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED and "256" in found.message
    assert "enable_cudnn_sdp(False)" in said(found)
    te = top("transformer_engine/pytorch/attention.py\ncuDNN Error: [cudnn_frontend] No "
             "execution plans support the graph\n", matrix)
    assert te.category == Category.KERNEL_FAILURE and "NVTE_FUSED_ATTN=0" in said(te)


def test_deepspeed_precompiling_ops_in_an_isolated_build(matrix: Matrix) -> None:
    text = ("pip install deepspeed\nAssertionError: Unable to pre-compile ops without torch "
            "installed. Please install torch before attempting to pre-compile ops.\n"
            "torch 2.0.0+cu118\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_ISOLATION
    assert "pip install deepspeed --no-build-isolation" in said(found)


def test_ggml_finding_no_cuda_device_points_at_the_driver(matrix: Matrix) -> None:
    found = top("ggml_init_cublas: no CUDA devices found, CUDA will be disabled\n", matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "nvidia-smi" in said(found)


def test_a_torch_without_distributed_and_an_unguarded_import(matrix: Matrix) -> None:
    text = ('  File "/env/lib/python3.10/site-packages/accelerate/accelerator.py", line 35\n'
            "ModuleNotFoundError: No module named 'torch._C._distributed_c10d'; 'torch._C' is "
            "not a package\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "pip install --upgrade accelerate" in said(found)


def test_a_stated_floor_on_another_package(matrix: Matrix) -> None:
    found = top("Commit 30a19a0 requires transformers>=4.52.0\nImportError: cannot import name "
                "'x'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "transformers>=4.52.0" in said(found)
    pinned = top("ImportError: transformers>=4.41.2,<=4.46.1 is required for a normal functioning "
                 "of this module, but found transformers==4.47.1.\nllamafactory 0.9.2\n", matrix)
    assert "4.47.1 is installed" in pinned.message and "DISABLE_VERSION_CHECK=1" in said(pinned)
    assert not [d for d in triage("It requires CUDA>=12.4 to build\n", matrix).diagnosis
                if "requires CUDA" in d.message]


def test_ollama_on_a_kepler_gpu(matrix: Matrix) -> None:
    found = top("ollama can't find my gpu and uses the cpu\nGPU: Tesla K80\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "3.7" in found.message


def test_every_gpu_of_a_listed_line_is_read(matrix: Matrix) -> None:
    found = top("ollama: I have a Nvidia tesla p40 and a k80 gpu and it will not use the gpu\n",
                matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "Tesla K80" in found.message
    assert "Tesla P40" in said(found)  # the supported one stays usable


def test_a_pytorch_index_torch_on_a_jetson(matrix: Matrix) -> None:
    text = ("container for Jetson Orin nano running JP60\n"
            "pip install torch==2.1.0 torchvision==0.16.0 --index-url https://example/whl/cu121 "
            "gives torch.cuda.is_available() as False\n")
    found = top(text, matrix)
    assert found.category == Category.WRONG_WHEEL and "l4t-pytorch" in said(found)
    thor = triage(text.replace("Orin nano", "AGX Thor"), matrix).diagnosis
    assert all(d.category != Category.WRONG_WHEEL for d in thor)


def test_a_submodule_the_installed_release_lacks(matrix: Matrix) -> None:
    text = ("from diffusers.models.attention_dispatch import AttentionBackendName\n"
            "ModuleNotFoundError: No module named 'diffusers.models.attention_dispatch'\n"
            "diffusers 0.34.0\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "0.34.0" in found.message
    assert "pip install --upgrade diffusers" in said(found)
    compiled = triage("ModuleNotFoundError: No module named 'xformers._C'\n", matrix).diagnosis
    assert all("has no xformers._C" not in d.message for d in compiled)


def test_a_torch_floor_keeps_the_cuda_variants_index(matrix: Matrix) -> None:
    text = ("Skipping import of cpp extensions due to incompatible torch version. Please upgrade "
            "to torch >= 2.11.0 (found 2.9.1+cu128).\n")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "2.9.1+cu128" in found.message
    assert "torch>=2.11.0" in said(found) and "whl/cu128" in said(found)


def test_rocblas_without_the_gpus_tensile_library(matrix: Matrix) -> None:
    text = ("rocBLAS error: Cannot read /venv/lib/python3.12/site-packages/torch/lib/rocblas/"
            "library/TensileLibrary.dat: Illegal seek for GPU arch : gfx900\n")
    found = top(text, matrix)
    assert found.category == Category.ROCM and "gfx900" in found.message
    assert "PYTORCH_ROCM_ARCH=gfx900" in said(found)
    rdna = top(text.replace("gfx900", "gfx1032"), matrix)
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in said(rdna)


def test_a_floor_the_installed_release_meets_is_not_the_cause(matrix: Matrix) -> None:
    text = ("ValueError: bf16 mixed precision requires PyTorch >= 1.10 and a supported device.\n"
            "torch 2.4.0\n")
    assert all(d.category != Category.VERSION_CONFLICT for d in triage(text, matrix).diagnosis)


def test_a_full_stop_after_a_driver_symbol_is_not_part_of_it(matrix: Matrix) -> None:
    text = ("ImportError: /opt/conda/lib/python3.10/site-packages/sgl_kernel/common_ops.abi3.so: "
            "undefined symbol: cuGreenCtxStreamCreate.\n")
    found = top(text, matrix)
    assert found.category == Category.DRIVER_TOO_OLD and "cuGreenCtxStreamCreate," in found.message


def test_mps_without_float64_and_bf16(matrix: Matrix) -> None:
    text = ('  File "/venv/lib/python3.11/site-packages/diffusers/models/embeddings.py", line 9\n'
            "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't "
            "support float64. Please use float32 instead.\n")
    found = top(text, matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "pip install --upgrade diffusers" in said(found) and "float32" in said(found)
    accel = top("On my M2 Max (mps)\nValueError: bf16 mixed precision requires PyTorch >= 1.10 "
                "and a supported device.\n", matrix)
    assert accel.category == Category.PLATFORM_UNSUPPORTED and "torch>=2.6.0" in said(accel)
    macos = top("TypeError: MPS BFloat16 is only supported on MacOS 14 or newer\n", matrix)
    assert macos.category == Category.PLATFORM_UNSUPPORTED and "float16" in said(macos)


def test_nvrtc_not_knowing_the_gpu_wants_a_newer_cuda_build(matrix: Matrix) -> None:
    text = ("nvrtc: error: invalid value for --gpu-architecture (-arch)\nRTX 4090\n"
            "pytorch 1.14+cu117 nightly\n")
    found = top(text, matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "cu118" in said(found)


def test_nvcc_failing_in_a_newer_gccs_headers(matrix: Matrix) -> None:
    text = ('/usr/include/c++/16.1.1/type_traits(393): error: identifier "char8_t" is undefined\n'
            '/usr/include/c++/16.1.1/type_traits(1448): error: identifier "__f" is undefined\n')
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "gcc 16" in found.message
    assert "CC=gcc-15" in said(found) and "CUDA 13.5" in said(found)
    gcc_style = triage("/usr/include/c++/13/bits/x.h:12:3: error: boom\n", matrix).diagnosis
    assert all("gcc 13's C++ headers" not in d.message for d in gcc_style)


def test_a_c10d_name_missing_from_torch_distributed(matrix: Matrix) -> None:
    text = ('File "...\\transformers\\generation\\continuous_batching\\distributed.py", line 19\n'
            "ImportError: cannot import name 'FileStore' from 'torch.distributed'\n")
    found = top(text, matrix)
    assert "without distributed support" in found.message
    assert "pip install --upgrade transformers" in said(found)
