"""Mechanisms taken up from held_out_18's development half: Triton missing or too old for torch
(torch's TritonMissing, with the pin of its wheel; triton-windows on Windows), Triton's
GPUTooOldForTriton, and Triton's ptx_get_version table stopping before the ptxas it runs."""

from __future__ import annotations

from tests.helpers.triage_said import said as _said
from tests.helpers.triage_said import top as _top

from fadoctor.matrix import Matrix
from fadoctor.report import Category

MISSING = ("backend='inductor' raised:\nRuntimeError: Cannot find a working triton installation. "
           "Either the package is not installed or it is too old.\n")


def test_triton_missing_gets_the_pin_of_torchs_wheel(matrix: Matrix) -> None:
    top = _top(MISSING + "torch 2.8.0+cu128\n", matrix)
    assert top.category == Category.NOT_INSTALLED
    assert "triton==3.4.0" in _said(top)
    windows = _top(MISSING + "I'm on Windows 11, torch 2.7.1+cu128\n", matrix)
    assert "triton-windows<3.4" in _said(windows) and "triton==" not in _said(windows)
    stated = _top(MISSING + "torch 2.6.0, triton 3.1.0, on Windows 11\n", matrix)
    assert stated.category == Category.VERSION_CONFLICT


def test_a_gpu_too_old_for_triton(matrix: Matrix) -> None:
    text = ("torch._inductor.exc.GPUTooOldForTriton: Found Tesla P100-PCIE-16GB which is too old "
            "to be supported by the triton GPU compiler, which is used as the backend. Triton only "
            "supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability "
            "6.0\n")
    top = _top(text, matrix)
    assert top.category == Category.GPU_UNSUPPORTED and "7.0" in top.message
    assert "eager" in _said(top)


def test_tritons_ptx_table_before_the_ptxas_it_runs(matrix: Matrix) -> None:
    text = ("    raise RuntimeError(\"Triton only support CUDA 10.0 or higher, but got CUDA version: \""
            " + cuda_version)\nRuntimeError: Triton only support CUDA 10.0 or higher, but got CUDA "
            "version: 12.8\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert "12.0-12.6" in top.message and "3.3 or newer" in _said(top)
    cuda13 = _top(text.replace("12.8", "13.0"), matrix)
    assert "3.5 or newer" in _said(cuda13)


def test_inductor_importing_a_name_triton_lacks(matrix: Matrix) -> None:
    """No versions stated (a prose "when PyTorch 2.3 comes out" is not the installed torch)."""
    text = ("[rank7]:     from triton.compiler.compiler import triton_key\n[rank7]: "
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n[rank7]: "
            "ImportError: cannot import name 'triton_key' from 'triton.compiler.compiler'\n"
            "Maybe it'll solve itself when Pytorch 2.3 comes out.\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert "pip check" in _said(top) and "triton==2.3" not in _said(top)


def test_tritons_launcher_finding_no_libcuda(matrix: Matrix) -> None:
    linker = _top("Number of parameters: 2768345600\n/usr/bin/ld: cannot find -lcuda\ncollect2: "
                  "error: ld returned 1 exit status\n  File \"mamba_ssm/utils/generation.py\"\n",
                  matrix)
    assert linker.category == Category.BUILD_TOOLCHAIN
    assert "TRITON_LIBCUDA_PATH" in _said(linker) and "symlink" in _said(linker)
    path = _top("  File \"triton/common/build.py\", line 20, in libcuda_dirs\nFileNotFoundError: "
                "[Errno 2] No such file or directory: 'ldconfig'\n", matrix)
    assert "/usr/sbin" in _said(path)


def test_an_fp8_matmul_on_a_gpu_before_ada(matrix: Matrix) -> None:
    text = ("3090Ti too old? Error: torch._scaled_mm is only supported on CUDA devices with compute "
            "capability >= 9.0 or 8.9, or ROCm MI300+\n")
    top = _top(text, matrix)
    assert top.category == Category.DTYPE_UNSUPPORTED and "sm_89" in top.message
    assert "fast mode" in _said(top)


def test_ptxas_older_than_the_ptx_isa_asked(matrix: Matrix) -> None:
    text = ("E   RuntimeError: Internal Triton PTX codegen error:\nE   ptxas /tmp/x.ptx, line 5; "
            "fatal   : Unsupported .version 8.6; current version is '8.5'\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT and "ISA 8.6" in top.message
    assert "TRITON_PTXAS_PATH" in _said(top)


def test_tritons_api_by_release_from_its_wheels(matrix: Matrix) -> None:
    """data/triton_api.yaml (tools/gen_triton_api.py from the release wheels): a module a
    library imports, and the torch built with the Triton that has it."""
    top = _top("from triton.tools.tensor_descriptor import TensorDescriptor\nModuleNotFoundError: "
               "No module named 'triton.tools.tensor_descriptor'\ntriton version: 3.3.1\n", matrix)
    assert top.category == Category.VERSION_CONFLICT
    assert "triton>=3.4.0" in _said(top) and "torch 2.8.0 is built with Triton 3.4" in _said(top)
    # triton.common lived from 2.1.0 to 2.3.1: without the installed Triton, both directions
    common = _top("  File \"unsloth/__init__.py\", line 9\n    from triton.common.build import "
                  "libcuda_dirs\nModuleNotFoundError: No module named 'triton.common'\n", matrix)
    assert "appeared in 2.1.0" in _said(common) and "triton==2.3.1" in _said(common)


def test_a_named_fa4_beta_and_the_defect_of_the_pass_that_failed(matrix: Matrix) -> None:
    """'FA4 b10' is flash-attn-4 4.0.0b10; its backward on a B200 with head dim 104 is the
    matrix's defect fixed in 4.0.0b30 (commit e8959409), before the forward small-head-dim one."""
    text = ("[FA4] Backward error on head_dim not divisible by 32\nout.sum().backward()\n"
            "Env: B200, FA4 b10\ncutlass._mlir._mlir_libs.MLIRError: Verification failed:\n")
    top = _top(text, matrix)
    assert "fa4-sm100-backward-head-dim" in top.message
    assert "flash-attn-4>=4.0.0b30" in _said(top)


def test_a_flash_attn_build_taking_tens_of_minutes_is_ninja_first(matrix: Matrix) -> None:
    top = _top("pip install takes 10+ minutes on zen2 epyc\n\n```\npip install flash-attn\n```\n",
               matrix)
    assert "ninja --version" in _said(top)


def test_a_setup_pys_own_toolkit_floor(matrix: Matrix) -> None:
    top = _top("  File \"SageAttention/setup.py\", line 131, in <module>\nRuntimeError: CUDA 12.0 or "
               "higher is required to build the package.\n", matrix)
    assert top.category == Category.BUILD_TOOLCHAIN and "12.0 or newer" in _said(top)


def test_tritons_own_invalid_kernel_image_is_its_cache_or_ptxas(matrix: Matrix) -> None:
    top = _top("Having this issue on A100 but not V100\nRuntimeError: Triton Error [CUDA]: device "
               "kernel image is invalid\n", matrix)
    assert top.category == Category.NO_KERNEL_IMAGE
    assert "TRITON_CACHE_DIR" in _said(top) and "flash-attn" not in _said(top)


def test_ggml_kernels_without_code_for_the_arch(matrix: Matrix) -> None:
    fa = _top("ggml-cuda/fattn-wmma-f16.cu:437: ERROR: CUDA kernel flash_attn_ext_f16 has no device "
              "code compatible with CUDA arch 720. ggml-cuda.cu was compiled for: 720\n", matrix)
    assert fa.category == Category.GPU_UNSUPPORTED
    assert "OLLAMA_FLASH_ATTENTION=0" in _said(fa)
    other = _top("mmv.cu:51: ERROR: CUDA kernel mul_mat_vec has no device code compatible with "
                 "CUDA arch 860. ggml-cuda.cu was compiled for: 520\n", matrix)
    assert other.category == Category.NO_KERNEL_IMAGE
    assert "CMAKE_CUDA_ARCHITECTURES=86" in _said(other) and "compiled for 520" in _said(other)


def test_forward_compatibility_names_the_drivers_cuda(matrix: Matrix) -> None:
    top = _top("CUDA error 804 at ggml-cuda.cu:5522: forward compatibility was attempted on non "
               "supported HW\nRTX3090 with `Driver Version: 525.105.17   CUDA Version: 12.0`.\n",
               matrix)
    assert top.category == Category.DRIVER_TOO_OLD
    assert "CUDA 12.0 or older" in _said(top)


def test_ollamas_rocm_target_list(matrix: Matrix) -> None:
    rdna = _top('level=WARN source=amd_linux.go:378 msg="amdgpu is not supported (supported '
                'types:[gfx1030 gfx1100 gfx906])" gpu_type=gfx1032\n', matrix)
    assert rdna.category == Category.ROCM
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in _said(rdna)
    vega = _top('msg="amdgpu is not supported (supported types:[gfx1030 gfx908 gfx90a])" '
                'gpu_type=gfx906\n', matrix)
    assert "HSA_OVERRIDE" not in " ".join(vega.remedies[0].commands)
    assert "AMDGPU_TARGETS" in _said(vega)


def test_flashinfers_jit_with_no_target_names_the_arch_list(matrix: Matrix) -> None:
    text = ("RTX 5090, cuda 12.8\n  File \"flashinfer/jit/core.py\", line 108, in check_cuda_arch\n"
            "RuntimeError: FlashInfer requires GPUs with sm75 or higher\n")
    top = _top(text, matrix)
    assert "FLASHINFER_CUDA_ARCH_LIST=12.0a" in _said(top)


def test_transformers_refusing_bf16_on_a_gpu_without_it(matrix: Matrix) -> None:
    top = _top("ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere "
               "GPU with cuda>=11.0\nGPU: 2080Ti\n", matrix)
    assert top.category == Category.DTYPE_UNSUPPORTED
    assert "--bf16 False --fp16 True" in _said(top)


def test_triton_without_a_c_compiler(matrix: Matrix) -> None:
    top = _top("RuntimeError: Failed to find C compiler. Please specify via CC environment "
               "variable.\n", matrix)
    assert top.category == Category.BUILD_TOOLCHAIN and "export CC=gcc" in _said(top)


def test_an_optional_attention_library_missing(matrix: Matrix) -> None:
    top = _top("Can't import SageAttention: No module named 'sageattention'\n", matrix)
    assert top.category == Category.NOT_INSTALLED
    assert "pip install sageattention" in _said(top) and "sdpa" in _said(top)
