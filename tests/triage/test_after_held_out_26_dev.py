"""The mechanisms written from held_out_26's development half, each on a text written for the
test (other versions, GPUs and packages than the reports had): unsloth's banner, pip listing
only newer releases, bf16 on a pre-Ampere GPU, a warning-only missing flash-attn, a private
extension module, Triton class attributes, the fused LayerNorm's dtype and size table, head-dim
and wheel questions, a binary built for another torch told in prose, the Triton implementation
faulting, the csrc extensions on ROCm, rounding differences, and a version the report says
worked."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_unsloths_cuda_field_is_the_compute_capability(matrix: Matrix) -> None:
    found = top("==((====))==  Unsloth 2025.2.4: Fast Llama patching. Transformers: 4.48.0. vLLM: "
                "0.7.1.\n   \\\\   /|    NVIDIA Tesla P40. Num GPUs = 1. Max memory: 23.8 GB.\n"
                "O^O/ \\_/ \\    Torch: 2.5.1+cu121. CUDA: 6.1. CUDA Toolkit: 12.1. Triton: 3.1.0\n"
                "FA2 = False\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED
    assert "compute capability 7.0" in said(found) and "toolkit here is 6" not in found.message


def test_pip_listing_only_newer_releases_means_a_too_new_python(matrix: Matrix) -> None:
    found = top("ERROR: Could not find a version that satisfies the requirement torch==2.0.1 (from "
                "versions: 2.1.0, 2.1.1, 2.2.0)\nERROR: No matching distribution found for "
                "torch==2.0.1\n", matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "Python 3.11" in said(found) and "is installed" not in found.message


def test_bf16_refused_on_a_turing_gpu_is_the_gpu(matrix: Matrix) -> None:
    found = top("GPU: NVIDIA GeForce RTX 2080 Ti\nValueError: bf16 mixed precision requires "
                "PyTorch >= 1.10 and a supported device.\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED and "fp16" in said(found)


def test_bf16_on_an_ampere_gpu_is_not_the_gpu(matrix: Matrix) -> None:
    found = top("GPU: NVIDIA A100-SXM4-80GB\nValueError: bf16 mixed precision requires PyTorch "
                ">= 1.10 and a supported device.\n", matrix)
    assert "no bf16 arithmetic" not in found.message


def test_a_missing_flash_attn_warning_alone_says_optional(matrix: Matrix) -> None:
    found = top("FlashAttention-2 is not installed.\nhow do I install it?\n", matrix)
    assert found.category == Category.NOT_INSTALLED and "optional" in said(found)


def test_a_private_extension_module_of_an_editable_install(matrix: Matrix) -> None:
    found = top("I ran pip install -e . in the checkout\nTraceback (most recent call last):\n"
                '  File "/src/fastserve/fastserve/engine/core.py", line 9, in <module>\n'
                "    import _fastserve_ops as ops\nModuleNotFoundError: No module named "
                "'_fastserve_ops'\n", matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "fastserve" in said(found) and "precompiled" in said(found)


def test_pythons_own_private_module_is_not_an_extension(matrix: Matrix) -> None:
    result = triage('  File "/usr/lib/python3.10/site-packages/somepkg/db.py", line 2, in '
                    "<module>\n    import _sqlite3\nModuleNotFoundError: No module named "
                    "'_sqlite3'\n", matrix)
    assert not any("_sqlite3, the compiled extension" in d.message for d in result.diagnosis)


def test_a_triton_class_attribute_is_the_torch_triton_pair(matrix: Matrix) -> None:
    found = top("AttributeError: type object 'JITFunction' has no attribute 'cache_hook'\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT and "triton" in said(found).lower()


def test_the_fused_layer_norm_names_the_dtypes_it_takes(matrix: Matrix) -> None:
    found = top("RuntimeError: BWD: Unsupported hidden_size or types: 4096HalfFloatFloatFloat"
                "Float\n", matrix)
    assert found.category == Category.DTYPE_UNSUPPORTED
    assert "float16 weight takes float16 or float32" in said(found)


def test_the_fused_layer_norm_names_its_sizes(matrix: Matrix) -> None:
    found = top("RuntimeError: FWD: Unsupported hidden_size or types: 3584BFloat16BFloat16BFloat16"
                "BFloat16Float\n", matrix)
    assert "3584 has no fused kernel" in said(found) and "triton" in said(found).lower()


def test_a_head_dim_question_gets_the_generation_limits(matrix: Matrix) -> None:
    found = top("Does flash attention support head dim 160? My model uses it.\n", matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED and "up to 256" in said(found)
    over = top("Can flash-attention support a head_size of 512?\n", matrix)
    assert "SDPA" in said(over)


def test_a_wheel_request_names_the_releases_that_have_it(matrix: Matrix) -> None:
    found = top("Please release a whl for torch 2.4, compiling takes hours\n", matrix)
    assert found.category == Category.WRONG_WHEEL
    assert "prebuilt wheel for torch 2.4" in said(found)
    other = top("xformers: no prebuilt wheel for torch 2.7 + cu118, the page is 404\n", matrix)
    assert "build from source" in said(other)


def test_a_cuda_minor_wheel_request_is_minor_version_compatibility(matrix: Matrix) -> None:
    found = top("Is there a wheel for CUDA 12.4? I only see cu12\n", matrix)
    assert found.category == Category.INFO and "minor version compatibility" in said(found)


def test_built_with_one_torch_failing_with_another_told_in_prose(matrix: Matrix) -> None:
    found = top("The fastkern wheel was built with PyTorch 2.4.0 and it does not work with "
                "PyTorch 2.6 anymore (undefined symbols).\n", matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH and "2.4.0" in said(found)


def test_the_triton_implementation_faulting(matrix: Matrix) -> None:
    found = top("using flash_attn_triton.py for the bias\nRuntimeError: CUDA error: misaligned "
                "address\n", matrix)
    assert found.category == Category.KERNEL_FAILURE and "alibi_slopes" in said(found)


def test_csrc_extensions_on_rocm(matrix: Matrix) -> None:
    found = top("Building csrc/rotary on my MI250X with ROCm 6.2 fails, is it supported?\n", matrix)
    assert found.category == Category.ROCM and "flash_attn.ops.triton.rotary" in said(found)


def test_a_small_bf16_difference_is_rounding(matrix: Matrix) -> None:
    found = top("flash_attn_func and the naive attention differ in bf16: max difference 0.0039\n",
                matrix)
    assert found.category == Category.INFO and "fp32" in said(found)
    nan = top("flash_attn_func gives NaN in bf16 while the naive attention does not\n", matrix)
    assert nan.category == Category.NUMERICS


def test_the_release_the_report_says_worked_is_pinned_back(matrix: Matrix) -> None:
    found = top("ModuleNotFoundError: No module named 'cutlass.utils.ampere_helpers'\nflash-attn-4 "
                "4.0.0b12 with nvidia-cutlass-dsl 4.3.1; rolling back to nvidia-cutlass-dsl==4.2.1 "
                "works\n", matrix)
    assert "nvidia-cutlass-dsl==4.2.1" in said(found)


def test_the_triton_amd_backends_dropout_refusal(matrix: Matrix) -> None:
    """A message the catalog now holds (flash_attn_triton_amd/interface_fa.py at v2.7.1)."""
    found = top("AssertionError: dropout is not supported on AMD's Triton Backend yet\n", matrix)
    assert found.category == Category.ROCM and "dropout_p=0.0" in said(found)


def test_fa4_feature_gates_on_sm80_are_catalogued(matrix: Matrix) -> None:
    """flash_attn/cute's "paged KV not supported on SM 8.0" (fa4 beta5 on): the arch gate."""
    found = top("GPU 0: NVIDIA A100-SXM4-80GB\nAssertionError: paged KV not supported on SM 8.0\n",
                matrix)
    assert found.category == Category.GPU_UNSUPPORTED
