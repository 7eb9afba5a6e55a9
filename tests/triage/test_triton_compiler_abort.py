"""Triton's compiler aborting (llvm_unreachable, report_fatal_error) while lowering a kernel, as
its assertion failures are read: a defect of that Triton release, with Triton's own support
floor (compute capability 8.0, its README) named below it."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_an_unreachable_in_a_triton_pass(matrix: Matrix) -> None:
    found = top("GPU: NVIDIA B200\nFailed to hoist tmem_store\nUNREACHABLE executed at "
                "/project/lib/Dialect/TritonGPU/Transforms/HoistTMEMAlloc.cpp:418!\nmodule {\n"
                "  tt.func public @kernel(%arg0: !tt.ptr<bf16>)\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "Upgrade Triton" in said(found)
    assert "8.0 and newer" not in found.message


def test_a_fatal_conversion_on_a_turing_gpu_names_the_floor(matrix: Matrix) -> None:
    found = top("Tesla T4\nRuntimeError: PassManager::run failed\nUnsupported conversion from f16 "
                "to f16\nLLVM ERROR: Unsupported rounding mode for conversion\n", matrix)
    assert found.category == Category.GPU_UNSUPPORTED and "8.0 and newer" in found.message
    assert "without torch.compile" in said(found)


def test_an_llvm_error_outside_triton_is_not_triton(matrix: Matrix) -> None:
    result = triage("LLVM ERROR: out of memory\nAllocation failed\n", matrix)
    assert all("Triton" not in d.message for d in result.diagnosis)


def test_a_missing_libdevice_is_a_broken_install_not_a_codegen_defect(matrix: Matrix) -> None:
    result = triage("triton\nLLVM ERROR: Can't find libdevice at neither /x/libdevice.10.bc\n",
                    matrix)
    assert all("inside its own compiler" not in d.message for d in result.diagnosis)
