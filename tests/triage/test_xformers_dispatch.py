"""xformers' dispatcher found no operator for the inputs: the reason that refuses the most
operators is the cause. The texts are written for these tests in the shape of xformers'
dispatch.py (_run_priority_list) with the reason strings of common.py and cutlass.py at its tags."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

INPUTS = """NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:
     query       : shape=({shape}) ({dtype})
     key         : shape=({shape}) ({dtype})
     value       : shape=({shape}) ({dtype})
     attn_bias   : <class 'NoneType'>
     p           : 0.0
"""


def _text(shape: str, dtype: str, ops: str) -> str:
    return INPUTS.format(shape=shape, dtype=dtype) + ops


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in [r.summary, *r.commands, r.code or ""])


def test_a_head_dim_no_operator_takes_is_the_cause(matrix: Matrix) -> None:
    text = _text("1, 4096, 1, 512", "torch.float16",
                 "`flshattF@v2.5.6` is not supported because:\n"
                 "    max(query.shape[-1], value.shape[-1]) > 256\n"
                 "    requires device with capability >= (8, 0) but your GPU has capability "
                 "(7, 5) (too old)\n"
                 "`cutlassF` is not supported because:\n"
                 "    max(query.shape[-1], value.shape[-1]) > 128\n") + "GPU: Tesla T4\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.HEAD_DIM_UNSUPPORTED
    assert "head dim 512" in top.message and "at most 256" in top.message
    assert "sdpa" in _said(top).lower()


def test_an_extension_that_did_not_load_is_a_torch_mismatch_pinned_to_the_installed_torch(
        matrix: Matrix) -> None:
    text = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.2.0+cu118)\n"
            + _text("2, 4096, 8, 40", "torch.float16",
                    "`flshattF@0.0.0` is not supported because:\n"
                    "    xFormers wasn't build with CUDA support\n"
                    "    operator wasn't built - see `python -m xformers.info` for more info\n"
                    "`cutlassF` is not supported because:\n"
                    "    xFormers wasn't build with CUDA support\n"
                    "    operator wasn't built - see `python -m xformers.info` for more info\n"))
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    said = _said(top)
    # the installed torch, its public version pinned and its variant's index added: `==2.2.0+cu118`
    # alone is on no default index
    assert "torch==2.2.0 " in said and "--extra-index-url" in said and "cu118" in said


def test_a_gpu_older_than_every_operator(matrix: Matrix) -> None:
    text = _text("2, 1024, 16, 64", "torch.bfloat16",
                 "`flshattF@v2.3.6` is not supported because:\n"
                 "    requires device with capability > (8, 0) but your GPU has capability "
                 "(7, 0) (too old)\n"
                 "`cutlassF` is not supported because:\n"
                 "    bf16 is only supported on A100+ GPUs\n"
                 "`smallkF` is not supported because:\n"
                 "    max(query.shape[-1] != value.shape[-1]) > 32\n"
                 "    dtype=torch.bfloat16 (supported: {torch.float32})\n"
                 "    bf16 is only supported on A100+ GPUs\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.DTYPE_UNSUPPORTED  # bfloat16 refuses two of the three
    assert "float16" in _said(top)


def test_float32_inputs(matrix: Matrix) -> None:
    text = _text("2, 4096, 8, 64", "torch.float32",
                 "`flshattF@v2.5.7` is not supported because:\n"
                 "    dtype=torch.float32 (supported: {torch.bfloat16, torch.float16})\n"
                 "`fa3F@0.0.0` is not supported because:\n"
                 "    dtype=torch.float32 (supported: {torch.bfloat16, torch.float16})\n"
                 "    operator wasn't built - see `python -m xformers.info` for more info\n"
                 "`cutlassF-pt` is not supported because:\n"
                 "    attn_bias type is <class 'xformers.ops.fmha.attn_bias.X'>\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.DTYPE_UNSUPPORTED
    assert "torch.float32" in top.message


def test_tensors_on_the_cpu(matrix: Matrix) -> None:
    text = _text("1, 77, 8, 64", "torch.float16",
                 "`flshattF@v2.5.7` is not supported because:\n"
                 "    device=cpu (supported: {'cuda'})\n"
                 "`cutlassF` is not supported because:\n"
                 "    device=cpu (supported: {'cuda'})\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_CPU_ONLY


def test_a_gpu_newer_than_the_release_accepts(matrix: Matrix) -> None:
    text = _text("1, 4096, 24, 128", "torch.bfloat16",
                 "`fa3F@2.8.0` is not supported because:\n"
                 "    requires device with capability <= (9, 0) but your GPU has capability "
                 "(12, 0) (too new)\n") + "NVIDIA GeForce RTX 5090\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "12.0" in top.message and "at most 9.0" in top.message


def test_no_block_no_finding(matrix: Matrix) -> None:
    text = "`cutlassF` is not supported because:\n    dtype=torch.float32 (supported: {})\n"
    assert all(d.details.get("source", "").find("xformers/ops/fmha/common.py") < 0
               for d in triage(text, matrix).diagnosis)


def test_the_flash_operator_forced_on_a_volta_in_xformers_0_0_16_wording(matrix: Matrix) -> None:
    text = ("ValueError: Operator `memory_efficient_attention` does not support inputs:\n"
            "     query       : shape=(1, 4101, 32, 128) (torch.float16)\n"
            "`flshattF` is not supported because:\n"
            "    requires a GPU with compute capability > 7.5\nV100 GPU\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "cutlass" in _said(top)
