"""Defects the held-out half of held_out_13 showed, fixed after its figure was taken (the
figure in docs/triage-catalog.md is the one before): flash-attn 1.x's Turing/Ampere check with
no GPU named must not send a V100 to flash-attn 2.x; vLLM's bfloat16 check is a dtype, not an
architecture refused; Windows' entry-point message with "could not be locate"."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_fa1_arch_check_without_a_gpu_turns_flash_off_first(matrix: Matrix) -> None:
    text = "RuntimeError: Expected is_sm8x || is_sm75 to be true, but got false.\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "sdpa" in top.remedies[0].summary.lower()
    assert "only on a Hopper GPU (sm90) does upgrading" in top.remedies[-1].summary


def test_fa1_arch_check_on_an_h100_upgrades(matrix: Matrix) -> None:
    text = ("RuntimeError: Expected is_sm8x || is_sm75 to be true, but got false.\n"
            "GPU: NVIDIA H100 80GB HBM3\n")
    top = triage(text, matrix).diagnosis[0]
    assert any("upgrade to flash-attn 2.x" in r.summary for r in top.remedies)


def test_vllm_bfloat16_on_a_v100_is_a_dtype(matrix: Matrix) -> None:
    text = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
            "8.0. Your Tesla V100-SXM2-32GB GPU has compute capability 7.0.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.DTYPE_UNSUPPORTED
    assert "--dtype half" in top.remedies[0].summary


def test_windows_entry_point_with_locate(matrix: Matrix) -> None:
    text = ('the procedure entry point ?element_size@TensorIteratorBase@at@@QEBA_JH@Z could not be '
            'locate in the dynamic link library k:\\ComfyUI\\env\\lib\\site-packages\\xformers\\'
            '_C.pyd\n')
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH and "xformers" in top.message


def test_fa1_head_dim_check_inside_torch_2_0_sdpa(matrix: Matrix) -> None:
    text = ("RuntimeError: Expected is_sm80 to be true, but got false.\n"
            "torch 2.0.0+cu118, RTX 4090, webui with --opt-sdp-attention\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.HEAD_DIM_UNSUPPORTED
    first = top.remedies[0]
    assert "pytorch#99736" in first.summary and first.code is not None
    assert "enable_flash_sdp(False)" in first.code
    assert first.commands and first.commands[0].startswith("python -m pip install torch==2.0.1+cu118 ")


def test_fa1_head_dim_check_from_flash_attn_itself_upgrades_it(matrix: Matrix) -> None:
    text = ("RuntimeError: Expected is_sm80 to be true, but got false.\nflash-attn 0.2.8\n"
            "GPU: RTX A6000\n")
    top = triage(text, matrix).diagnosis[0]
    assert "flash-attn>=2.5.5" in " ".join(c for r in top.remedies for c in r.commands)


def test_no_available_kernel_on_windows_names_the_windows_wheels(matrix: Matrix) -> None:
    text = "RuntimeError: No available kernel. Aborting execution.\n\nHow to fix it on windows ?\n"
    top = triage(text, matrix).diagnosis[0]
    assert "pytorch#125070" in top.remedies[0].summary and top.remedies[0].code


def test_no_available_kernel_on_linux_allows_other_backends(matrix: Matrix) -> None:
    text = "RuntimeError: No available kernel. Aborting execution.\nUbuntu 22.04\n"
    top = triage(text, matrix).diagnosis[0]
    assert "pytorch#125070" not in top.remedies[0].summary


def test_a_tensor_for_an_int_at_flash_attn_s_custom_op(matrix: Matrix) -> None:
    text = ("TorchRuntimeError: flash_attn::_flash_attn_varlen_forward() Expected a value of type "
            "'int'\nfor argument 'max_seqlen_q' but instead found type 'FakeTensor'.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.COMPILE_GRAPH_BREAK and "'max_seqlen_q'" in top.message
    codes = " ".join(r.code or "" for r in top.remedies)
    assert "capture_scalar_outputs = True" in codes


def test_sage_attention_s_arch_check_quoted_in_a_title(matrix: Matrix) -> None:
    text = ("RTX 6000 Unsupported CUDA architecture: sm75\n\nI have an Nvidia Quadro RTX 6000. I "
            "don't know whether to install Xformers, Flash and Sage.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and top.message.startswith("SageAttention")


def test_cuda_home_unset_with_a_cpu_torch(matrix: Matrix) -> None:
    text = ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA "
            "install root.\nPyTorch version: 2.3.0+cpu\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_CPU_ONLY and "2.3.0+cpu" in top.message


def test_tensorrt_llm_head_size(matrix: Matrix) -> None:
    text = ("[TensorRT-LLM][ERROR] Assertion failed: Size per head is not a multiple of X "
            "(unfusedAttentionKernels.cu:1710)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.HEAD_DIM_UNSUPPORTED and "104" in top.remedies[0].summary
