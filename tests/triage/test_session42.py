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
