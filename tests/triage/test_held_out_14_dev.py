"""Mechanisms read from the development half of held_out_14, each from its upstream source."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def _said(text: str, matrix: Matrix) -> str:
    top = triage(text, matrix).diagnosis[0]
    return " ".join(f"{r.summary} {' '.join(r.commands)} {r.code or ''}" for r in top.remedies)


def test_torch_headers_needing_cxx20(matrix: Matrix) -> None:
    text = ("Building FlashAttention 2.8.4 against PyTorch 2.14.0+cu132:\n"
            "/torch/include/ATen/ATen.h:5:2: error: #error C++20 or later compatible compiler is "
            "required to use ATen.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT and "C++20" in top.message
    said = _said(text, matrix)
    assert "-std=c++20" in said and "torch 2.13 or older" in said and "flash-attn" in said


def test_an_ngc_container_s_driver_check(matrix: Matrix) -> None:
    text = ("ERROR: This container was built for NVIDIA Driver Release 535.86 or later, but\n"
            "       version 510.85.02 was detected and compatibility mode is UNAVAILABLE.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.DRIVER_TOO_OLD
    assert "535.86" in top.message and "510.85.02" in top.message
    assert "535.86 or newer" in top.remedies[0].summary


def test_xformers_built_without_its_flash_operators(matrix: Matrix) -> None:
    text = ("RuntimeError: No such operator xformers_flash::flash_fwd - did you forget to build "
            "xformers with `python setup.py develop`?\nbuilt with: env FORCE_CUDA=1 "
            "XFORMERS_DISABLE_FLASH_ATTN=1 pip install -v --no-deps git+https://github.com/"
            "facebookresearch/xformers.git@main#egg=xformers\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED and "XFORMERS_DISABLE_FLASH_ATTN=1" in top.message


def test_xformers_missing_an_operator_otherwise(matrix: Matrix) -> None:
    text = "RuntimeError: No such operator xformers::efficient_attention_forward_cutlass\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.remedies[0].commands == ["python -m xformers.info"]


def test_llvm_that_does_not_know_the_gpu(matrix: Matrix) -> None:
    text = ("'sm_120' is not a recognized processor for this target (ignoring processor)\n"
            "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync.bfly.i32\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NO_KERNEL_IMAGE and "sm_120" in top.message
    assert "Upgrade Triton" in top.remedies[0].summary


def test_rocm_flash_attention_on_a_radeon_under_vllm(matrix: Matrix) -> None:
    text = ("I get the error `RuntimeError: FlashAttention only supports AMD MI200 GPUs or newer.` "
            "when I try to run vllm on my RX 7900 XTX.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.ROCM
    assert top.remedies[0].commands == ["export VLLM_USE_TRITON_FLASH_ATTN=1"]


def test_a_correctness_issue_in_flash_attn_4(matrix: Matrix) -> None:
    text = ("[Cute,FA4,Fwd,Sm100] Correctness issue when QKV is non-contiguous on SM100 for hdim 256\n"
            "FA version: flash-attn-4 4.0.0b18\nfrom flash_attn.cute.interface import "
            "flash_attn_func\nq = torch.randn(b, h, s, d, dtype=torch.bfloat16)\n"
            "out1 = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))[0]\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NUMERICS
    said = _said(text, matrix)
    assert ".contiguous()" in said and "flash-attn-4" in said
    assert "fp16 overflows" not in said  # bfloat16 is not float16
