"""A package's Triton kernel that the installed Triton cannot compile: the package (the nearest
frame outside Triton and torch) and Triton disagree, a weak finding below any message that
names a cause."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

_TRACE = ('  File "/e/site-packages/liger_kernel/ops/swiglu.py", line 40, in swiglu_forward\n'
          '    _swiglu_forward_kernel[(n_rows,)](\n'
          '  File "/e/site-packages/triton/compiler/compiler.py", line 191, in compile\n'
          '    module = src.make_ir(options)\n'
          "triton.compiler.errors.CompilationError: at 4:31:def _swiglu_forward_kernel(\n")


def test_a_kernel_that_does_not_compile_names_its_package(matrix: Matrix) -> None:
    found = top(_TRACE, matrix)
    assert found.category == Category.VERSION_CONFLICT and "liger-kernel's Triton kernel" in \
        found.message
    assert "downgrade liger-kernel" in said(found)


def test_the_pass_manager_failing_reads_the_same(matrix: Matrix) -> None:
    text = _TRACE.replace("triton.compiler.errors.CompilationError: at 4:31:def "
                          "_swiglu_forward_kernel(", "RuntimeError: PassManager::run failed")
    found = top(text, matrix)
    assert found.category == Category.VERSION_CONFLICT and "liger-kernel" in found.message


def test_flash_attns_pre_mlir_kernel_is_not_read_here(matrix: Matrix) -> None:
    text = "attn_impl: triton\n" + _TRACE
    assert all(d.subject != "triton_compile" for d in triage(text, matrix).diagnosis)


def test_a_refused_launch_puts_tritons_release_first(matrix: Matrix) -> None:
    found = top("Triton 3.6.0, H100\n  File \"/e/site-packages/fla/ops/utils/cumsum.py\", line 9, "
                "in chunk_local_cumsum\nRuntimeError: Triton Error [CUDA]: invalid argument\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT and "cannot launch it" in found.message
    assert found.remedies[0].summary.startswith("Downgrade Triton")


def test_attn_implementation_does_not_hide_a_kernel_package(matrix: Matrix) -> None:
    found = top('model = AutoModel.from_pretrained(x, attn_implementation="sdpa")\n' + _TRACE,
                matrix)
    assert "liger-kernel's Triton kernel" in found.message


def test_inductors_generated_kernels_are_not_a_packages(matrix: Matrix) -> None:
    text = ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
            '  File "/e/site-packages/transformers/models/llama/modeling_llama.py", line 9\n'
            "triton.compiler.errors.CompilationError: at 1:0: def triton_poi_fused_0(\n")
    assert all(d.subject != "triton_compile" for d in triage(text, matrix).diagnosis)
