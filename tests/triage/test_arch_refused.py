"""A package's own refusal of the GPU's architecture, in words no catalog entry holds: what the
GPU is against what the message lists picks the remedy (the feature off on pre-Ampere GPUs, an
upgrade where the message lists the GPU's own architecture, another path otherwise)."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

_TRTLLM = ("[TensorRT-LLM][ERROR] Assertion failed: Unsupported architecture (/src/TensorRT-LLM/cpp/"
           "tensorrt_llm/kernels/contextFusedMultiHeadAttention/fmhaRunner.cpp:87)\n")


def _said(found: object) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in found.remedies)  # type: ignore


def test_a_pre_ampere_gpu_turns_the_fused_feature_off(matrix: Matrix) -> None:
    top = triage(f"Building the engine on a Tesla V100:\n{_TRTLLM}", matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "TensorRT-LLM refuses" in top.message and "sm_70" in top.message
    assert "unfused path" in _said(top) and "Ampere (sm80" in _said(top)


def test_the_gpus_own_architecture_listed_means_a_newer_release(matrix: Matrix) -> None:
    text = ("Cannot build engine with FP8 FMHA on RTX 5090\n[TensorRT-LLM][ERROR] Assertion "
            "failed: FP8 FMHA cannot be enabled except on Ada or Hopper or Blackwell Arch.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "(Blackwell)" in top.message
    assert "Upgrade TensorRT-LLM" in _said(top) and "pip install" not in _said(top)


def test_another_architecture_gets_the_other_path(matrix: Matrix) -> None:
    text = ("on my RTX 4090:\nRuntimeError: this kernel is only supported on Hopper GPUs\n"
            '  File "/v/site-packages/xformers/ops/fmha/flash3.py", line 9\n')
    found = [d for d in triage(text, matrix).diagnosis if "refuses the architecture" in d.message]
    assert found and "xformers has no kernels for GeForce RTX 4090 (sm_89)" in found[0].message


def test_prose_about_support_is_not_a_refusal(matrix: Matrix) -> None:
    text = "Is the V100 architecture not supported? I read it somewhere, no error yet.\n"
    assert not [d for d in triage(text, matrix).diagnosis if "refuses" in d.message]


def test_a_catalogued_message_stays_first(matrix: Matrix) -> None:
    text = ("GPU: Tesla T4\nRuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"
            "AssertionError: unsupported architecture\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "refuses" not in top.message


def test_ada_is_a_word_not_a_substring(matrix: Matrix) -> None:
    text = ("RTX 4090 here\nRuntimeError: metadata kernel is only supported on Hopper GPUs\n")
    found = [d for d in triage(text, matrix).diagnosis if "refuse" in d.message]
    assert found and "own architecture" not in found[0].message


def test_a_refusal_retold_in_prose_names_the_feature_flag(matrix: Matrix) -> None:
    text = ("support on V100 GPU\nI tried to build llama-2, it is giving unsupported architecture.\n"
            "python build.py --dtype float16 --enable_context_fmha\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "sm_70" in top.message
    assert "(here --enable_context_fmha)" in _said(top)
