"""transformers refusing flash-attention for a model class, uv's match-runtime check, CCCL's
MSVC preprocessor check, flash-attn-4 against the DSL's compile errors, a Windows wheel of
another Python, a source build that still misses a torch symbol, and a title's "undefined
symbol" that names none. The texts are written for these tests in the shapes the tools print."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in [r.summary, *r.commands, r.code or ""])


def test_a_model_class_without_flash_attention(matrix: Matrix) -> None:
    text = "ValueError: QWenLMHeadModel does not support Flash Attention 2.0 yet.\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "model code" in _said(top) and "attn_implementation" in _said(top)


def test_uv_match_runtime_without_static_metadata(matrix: Matrix) -> None:
    text = ("  \u00d7 Failed to download and build `flash-attn==2.8.3`\n"
            "  ╰─▶ Extra build requirement `torch` was declared with `match-runtime = true`, but "
            "`flash-attn` does not declare static metadata, making runtime-matching impossible\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_ISOLATION
    said = _said(top)
    assert "uv self update" in said and "tool.uv.dependency-metadata" in said
    assert 'version = "2.8.3"' in said  # the release uv was building


def test_msvc_traditional_preprocessor(matrix: Matrix) -> None:
    text = ("cccl/cuda/std/__cccl/preprocessor.h(20): fatal error C1189: #error: MSVC/cl.exe with "
            "traditional preprocessor is used ... pass `/Zc:preprocessor` to cl.exe\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_TOOLCHAIN
    assert "set CL=/Zc:preprocessor" in _said(top)


def test_the_dsl_refusing_fa4_kernel_code(matrix: Matrix) -> None:
    text = ("nvidia-cutlass-dsl==4.6.0\nflash-attn-4==4.0.0b30\n"
            "cutlass.base_dsl.common.DSLUserCodeError:\n"
            "error[TYPE_UNSTABLE_JOIN]: `n_block_first` has type `None` on one path and `Int32` "
            "on another.\n    --> flash_attn/cute/flash_fwd_sm100.py:1484\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "nvidia-cutlass-dsl" in _said(top)


def test_a_windows_wheel_of_another_python(matrix: Matrix) -> None:
    text = ("I'm on Windows 11. ERROR: flash_attn-2.5.9.post1+cu122torch2.3.1cxx11abiFALSE-cp39-"
            "cp39-win_amd64.whl is not a supported wheel on this platform.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.WRONG_WHEEL
    assert "cp310" in _said(top)


def test_a_source_build_that_still_misses_a_torch_symbol(matrix: Matrix) -> None:
    text = ("I did a fresh source build against torch 2.6.\n"
            "ImportError: /ws/causal-conv1d/causal_conv1d_cuda.cpython-310-x86_64-linux-gnu.so: "
            "undefined symbol: _ZN3c104cuda9SetDeviceEab\n")
    top = triage(text, matrix).diagnosis[0]
    assert "Upgrade causal-conv1d" in _said(top)


def test_a_title_saying_undefined_symbol_names_no_symbol(matrix: Matrix) -> None:
    text = ("Installation fails with flash-attention undefined symbol error\n"
            "- PyTorch: 2.5.1\n"
            "/venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so:"
            " undefined symbol: _ZNK3c1011StorageImpl27throw_data_ptr_access_errorEv\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    assert "StorageImpl" in top.message


def test_a_cuda_driver_api_symbol_is_the_driver(matrix: Matrix) -> None:
    text = ("ImportError: /venv/lib/python3.11/site-packages/sgl_kernel/common_ops.abi3.so: "
            "undefined symbol: cuGreenCtxDestroy\nCUDA Driver Version: 535.86.10\n"
            "PyTorch: 2.7.1+cu126\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.DRIVER_TOO_OLD
    assert "560.28.03" in _said(top)  # CUDA 12.6's own driver, from the matrix


def test_jetson_thor_with_a_release_wheel_needs_the_main_branch(matrix: Matrix) -> None:
    # no release's setup.py emits sm_110 (v2.8.3:setup.py:179-191); main adds it
    text = ("Jetson Thor: Flash Attention TORCH_USE_CUDA_DSA problem\n"
            "flash-attn                2.8.3+cu130torch2.10\ntorch                     2.10.0+cu130\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NO_KERNEL_IMAGE
    assert "FLASH_ATTN_CUDA_ARCHS=110" in _said(top)


def test_the_logged_fp32_warning_under_mixed_precision_is_harmless(matrix: Matrix) -> None:
    text = ("Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the "
            "current dype in Qwen3ForCausalLM is torch.float32. You should run training or "
            "inference using Automatic Mixed-Precision via the `with torch.autocast(device_type="
            "'torch_device'):` decorator, or load the model with the `torch_dtype` argument.\n"
            "Is this an issue?\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.DTYPE_UNSUPPORTED
    assert "harmless" in _said(top)


def test_a_feature_only_the_fa3_path_has_on_an_ada_gpu(matrix: Matrix) -> None:
    text = ("vllm serve openai/gpt-oss-20b\nGPU: NVIDIA GeForce RTX 4090\n"
            "AssertionError: Sinks are only supported in FlashAttention 3\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "TRITON_ATTN" in _said(top)


def test_gpus_older_than_ampere_in_prose_are_no_ampere_gpu(matrix: Matrix) -> None:
    text = "flash-attn >= 2.0.0 breaks exllamav2 support on GPUs older than Ampere\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "older than Ampere" in top.message


def test_an_unchecked_macos_box_is_not_macos(matrix: Matrix) -> None:
    text = ("Stuck at Building wheel for flash-attn for over an hour\n"
            "### Which Operating Systems are you using?\n- [x] Linux\n- [ ] macOS\n- [ ] Windows\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category != Category.PLATFORM_UNSUPPORTED


def test_a_toolkit_of_another_major_than_torchs_cuda_in_prose(matrix: Matrix) -> None:
    text = ("I want to install flash-attn.\ntorch.__version__  = 2.1.2+cu118\n"
            "cuda version: 12.0\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_TOOLCHAIN
    assert "torch==2.1.2+cu121" in _said(top)


def test_a_feature_with_sm90_kernels_only_on_a_blackwell_gpu(matrix: Matrix) -> None:
    text = ("gpt-oss not running on RTX5090 [ERROR] Assertion failed: The attention sinks is only "
            "supported on SM90\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "Hopper" in _said(top)


def test_flash_attn_1_under_transformers_4_34_from_its_env_listing(matrix: Matrix) -> None:
    text = ("- `transformers` version: 4.34.0\n- PyTorch version (GPU?): 2.1.0+cu121 (True)\n"
            "Name: flash-attn\nVersion: 1.0.9\n")
    result = triage(text, matrix)
    assert "2.1.0+cu121" in str(result.environment.torch)  # the env listing's PyTorch line
    top = result.diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "transformers>=4.35.0" in _said(top)
