"""ptxas refusing PTX older than its target or an instruction, pip finding no triton at all on a
machine the report does not place, a retold `no module named Triton`, and a model that
overflows float16 with no flash-attention in the report."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_ptx_older_than_the_target_means_an_older_generator(matrix: Matrix) -> None:
    found = top("torch._inductor.exc.InductorError: Internal Triton PTX codegen error:\n"
                "ptxas /tmp/x.ptx, line 6; error   : PTX .version 7.8 does not support "
                ".target sm_120\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "PTX ISA 7.8 is older than sm_120 needs" in found.message
    assert "Upgrade Triton" in said(found)


def test_a_feature_needing_a_newer_isa_without_triton_names_the_compiler(matrix: Matrix) -> None:
    found = top("ptxas error   : Feature 'cvt.e4m3x2' requires PTX ISA .version 8.1 or later\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "the code generator" in found.message
    assert "Upgrade Triton" not in said(found) and "compiler that emitted" in said(found)


def test_no_triton_anywhere_on_an_unplaced_machine_is_windows_or_macos(matrix: Matrix) -> None:
    found = top("ERROR: Could not find a version that satisfies the requirement triton (from "
                "versions: none)\nERROR: No matching distribution found for triton\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert "triton-windows" in said(found)


def test_no_triton_on_a_mac_has_no_windows_fork_to_offer(matrix: Matrix) -> None:
    found = top("(venv) user@MacBook-Pro ~ % pip install triton\nmacOS 14.5, Apple M2\n"
                "ERROR: Could not find a version that satisfies the requirement triton (from "
                "versions: none)\n", matrix)
    assert found.category == Category.PLATFORM_UNSUPPORTED
    assert "macOS" in found.message and "triton-windows" not in said(found)


def test_no_triton_on_linux_is_not_called_a_platform_gap(matrix: Matrix) -> None:
    result = triage("Ubuntu 22.04, Python 3.14\nERROR: Could not find a version that satisfies "
                    "the requirement triton (from versions: none)\n", matrix)
    assert all("Windows or macOS" not in d.message for d in result.diagnosis)


def test_a_retold_missing_triton_on_windows(matrix: Matrix) -> None:
    found = top("Can't run it locally in windows\n\nIt says no module named Triton\n", matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "triton-windows" in said(found)


def test_nan_in_float16_on_a_v100_asks_for_float32(matrix: Matrix) -> None:
    found = top("GPU: Tesla V100-SXM2-32GB\nmodel = AutoModelForCausalLM.from_pretrained(m, "
                "torch_dtype=torch.float16)\nthe logits are all nan after a few tokens\n", matrix)
    assert found.category == Category.NUMERICS
    assert "float32" in said(found) and "no bf16" in said(found)


def test_bf16_working_where_fp16_does_not_asks_for_bf16(matrix: Matrix) -> None:
    found = top("GPU type: NVIDIA GeForce RTX 4090\ncompute_dtype = torch.float16 # bfloat16 "
                "works fine\nthe output is empty\n", matrix)
    assert found.category == Category.NUMERICS
    assert "bfloat16" in said(found)


def test_nan_in_bf16_too_is_not_fp16s_range(matrix: Matrix) -> None:
    result = triage("SDPA backward gives nan grad_q\nReproduces in bf16 and fp16, "
                    "dtype=torch.float16\n", matrix)
    assert all("overflows float16" not in d.message for d in result.diagnosis)
