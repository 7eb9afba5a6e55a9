"""The mechanisms written from held_out_27's development half, each on a text written for the
test: a listed kernel-library release without kernels for the GPU beside a stated failure, SDPA's
cuDNN graph failing to execute, SDPA's NaN on fully masked rows (and a link into PyTorch's own
FlashAttentionKernel.cpp not read as flash-attention on a Mac), pip replacing torch told in
prose, vLLM's V1 engine below Ampere, Transformer Engine's flash-attn caps by release, the
linker finding no CUDA library, and bitsandbytes' pre-0.42 missing-binary line."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_a_listed_flashinfer_release_without_the_gpus_kernels(matrix: Matrix) -> None:
    found = top("Server fails to start\nGPU 0: NVIDIA GeForce RTX 2080\nflashinfer: 0.1.2\n",
                matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "0.1.6" in said(found)


def test_cudnn_sdpa_graph_failing_to_execute(matrix: Matrix) -> None:
    found = top("RuntimeError: Expected mha_graph->execute(handle, variant_pack, workspace_ptr.get())"
                ".is_good() to be true, but got false.\n", matrix)
    assert found.category == Category.KERNEL_FAILURE and "enable_cudnn_sdp(False)" in said(found)


def test_sdpa_nan_on_fully_masked_rows(matrix: Matrix) -> None:
    found = top("F.scaled_dot_product_attention returns nan for the padded queries: those rows "
                "are fully masked\n", matrix)
    assert found.category == Category.NUMERICS and "at least one key" in said(found)


def test_a_link_to_pytorchs_flash_kernel_is_not_flash_attn_on_a_mac(matrix: Matrix) -> None:
    result = triage("SDPA on MPS (macOS 15) gives NaN where every key is masked, unlike "
                    "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cpu/"
                    "FlashAttentionKernel.cpp\n", matrix)
    assert all(d.category != Category.PLATFORM_UNSUPPORTED for d in result.diagnosis)


def test_pip_replacing_torch_told_in_prose(matrix: Matrix) -> None:
    found = top("pip install xformers-0.0.17-cp310-cp310-win_amd64.whl\nit always uninstalls my "
                "torch 1.13.1 and installs 2.0\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "xformers==0.0.16" in said(found)


def test_vllm_v1_below_ampere(matrix: Matrix) -> None:
    found = top("export VLLM_USE_V1=1\nGPU: Tesla T4\nAssertionError in "
                "vllm/v1/attention/backends/flash_attn.py\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "VLLM_USE_V1=0" in said(found)
    assert "vllm>=0.10.2" in said(found)


def test_transformer_engine_cap_names_the_release_that_lifts_it(matrix: Matrix) -> None:
    found = top("transformer_engine requires flash-attn<=2.3.3 and I need flash-attn 2.5\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "Upgrade Transformer Engine to 1.3" in said(found)


def test_the_linker_finding_no_cuda_library(matrix: Matrix) -> None:
    found = top("/usr/bin/ld: cannot find -lcublas: No such file or directory\ncollect2: error: ld "
                "returned 1 exit status\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "lib64/libcublas.so" in said(found)


def test_old_bitsandbytes_missing_binary_line(matrix: Matrix) -> None:
    found = top("CUDA SETUP: Required library version not found: libbitsandbytes_cuda124.so. Maybe "
                "you need to compile it from source?\n", matrix)
    assert found.category == Category.WRONG_WHEEL and "CUDA 12.4" in found.message
