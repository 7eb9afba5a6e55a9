"""The framework a report names gives its own switch off flash-attention (each cited to where
the framework defines it); the texts are written for these tests."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.switches import SWITCHES


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in [r.summary, *r.commands, r.code or ""])


def test_every_switch_cites_a_source_at_a_tag_or_commit() -> None:
    for switch in SWITCHES:
        assert "@" in switch.source and ":" in switch.source.split("@", 1)[1]


def test_tgi_on_a_t4_names_its_variable(matrix: Matrix) -> None:
    text = ("docker run --gpus all ghcr.io/huggingface/text-generation-inference --model-id x\n"
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\nGPU: Tesla T4\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "USE_FLASH_ATTENTION=False" in _said(top)


def test_axolotl_on_a_volta_names_its_config_keys(matrix: Matrix) -> None:
    text = "axolotl training with flash attention fails on our V100 cards\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "sdp_attention: true" in _said(top)


def test_no_framework_no_switch(matrix: Matrix) -> None:
    text = "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\nGPU: Tesla T4\n"
    top = triage(text, matrix).diagnosis[0]
    assert "Turn flash-attention off in the framework" not in _said(top)


def test_a_vllm_without_the_xformers_backend_gets_no_command_for_it(matrix: Matrix) -> None:
    text = ("vllm==0.14.0\nvllm serve x\nGPU: Tesla T4\n"
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n")
    top = triage(text, matrix).diagnosis[0]
    assert "VLLM_ATTENTION_BACKEND=XFORMERS" not in [c for r in top.remedies for c in r.commands]
    assert "TRITON_ATTN" in _said(top)
