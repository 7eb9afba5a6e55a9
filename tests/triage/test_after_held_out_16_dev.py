"""Mechanisms taken up from held_out_16's development half: Triton's shared-memory limit, a
flash-attn function's return count by release (read by tools/gen_fa_api.py at the tags), and
pybind11 refusing a call to another release's compiled function."""

from __future__ import annotations

import sys
from pathlib import Path

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_api import api

ROOT = Path(__file__).resolve().parents[2]


def _said(found: object) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)} {r.code or ''}"  # type: ignore
                    for r in found.remedies)  # type: ignore[attr-defined]


def test_a_triton_kernel_tuned_for_more_shared_memory(matrix: Matrix) -> None:
    text = ("I'm running flex_attention on one RTX 4090:\ntriton.runtime.errors.OutOfResources: "
            "out of resource: shared memory, Required: 131074, Hardware limit: 101376. Reducing "
            "block sizes or `num_stages` may help.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "needs 131074 bytes" in top.message and "(sm_89) has 101376" in top.message
    assert "kernel_options" in _said(top) and "an A100 (sm_80) holds 131074 bytes" in _said(top)


def test_a_config_too_big_even_for_an_a100_names_hopper(matrix: Matrix) -> None:
    text = "OutOfResources: out of resource: shared memory, Required: 200000, Hardware limit: 166912\n"
    assert "H100/H200 (sm_90) holds 200000" in _said(triage(text, matrix).diagnosis[0])


def test_inductors_kernel_name_and_the_limits_own_gpu(matrix: Matrix) -> None:
    """Inductor's autotuning names the kernel in place of the resource, the numbers on the next
    line; the limit printed is 99 KB, so the H100 the text names as working is not the GPU."""
    text = ("flex_attention fails on my A10G, works on H100\nOutOfMemoryError: out of resource: "
            "triton_tem_fused_flex_attention_0\nRequired: 139776  Hardware limit: 101376\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "sm_86/sm_89/sm_120" in top.message
    assert "H100" not in top.message.split(":")[0] and "kernel_options" in _said(top)
    assert not triage("Required: 139776  Hardware limit: 101376\n", matrix).diagnosis


def test_the_generator_reads_a_functions_return_count() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_fa_api
    source = ("def f(x):\n    if x:\n        return (1, 2, 3)\n    return 4, 5, 6\n"
              "def g(x):\n    def inner():\n        return 1, 2\n    return x\n"
              "def h(x):\n    return (x, *x)\n")
    assert dict(gen_fa_api.arities(source, interface=False)) == {"f": 3}


def test_unpad_input_returns_five_from_2_7_0() -> None:
    counts = api("flash_attn").returns["flash_attn.bert_padding:unpad_input"]
    data = api("flash_attn")
    assert data.version(max(counts["4"])) == "2.6.3" and data.version(min(counts["5"])) == "2.7.0"


def test_a_caller_unpacking_the_old_count_gets_the_releases(matrix: Matrix) -> None:
    text = ("flash_attn 2.7.1.post1\n  File \"llava/train/patch.py\", line 85, in forward\n"
            "    qkv, indices, cu_q_lens, max_s = unpad_input(qkv, key_padding_mask)\n"
            "ValueError: too many values to unpack (expected 4)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "returns 5 in the installed release" in top.message  # type: ignore[attr-defined]
    assert "flash-attn==2.6.3" in _said(top) and "Unpack 5 values" in _said(top)


def test_an_unpacking_error_elsewhere_is_not_flash_attns(matrix: Matrix) -> None:
    text = ("    a, b = load_config(path)\nValueError: too many values to unpack (expected 2)\n")
    assert not [d for d in triage(text, matrix).diagnosis if d.subject == "api_returns"]


def test_pybind_refusing_an_extensions_call(matrix: Matrix) -> None:
    text = "TypeError: causal_conv1d_fwd(): incompatible function arguments. The following\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "causal-conv1d's compiled causal_conv1d_fwd" in top.message  # type: ignore
    assert "downgrade causal-conv1d" in _said(top)
