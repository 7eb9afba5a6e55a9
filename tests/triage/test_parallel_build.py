"""A build with many parallel jobs that failed without a compiler error reads as memory (the
weakest finding); a compiler error in the log, or prose saying "building from source", does not."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

# written for this test, in the shape of a CMake-driven extension build under pip
FAILED = ("      subprocess.CalledProcessError: Command '['cmake', '--build', '.', '-j=48', "
          "'--target=_C']' returned non-zero exit status 1.\n"
          "  ERROR: Failed building wheel for myext\n")


def test_many_jobs_and_no_compiler_error_is_memory(matrix: Matrix) -> None:
    top = triage("Cannot compile when building from source\n" + FAILED, matrix).diagnosis[0]
    assert top.category == Category.BUILD_RESOURCES
    assert "48 parallel jobs" in top.message
    assert any("MAX_JOBS=" in c for rem in top.remedies for c in rem.commands)


def test_a_compiler_error_is_not_read_as_memory(matrix: Matrix) -> None:
    text = ("csrc/flash_attn/flash_api.cpp:12:10: fatal error: cuda_runtime.h: No such file or "
            "directory\n" + FAILED)
    assert all("parallel jobs" not in d.message for d in triage(text, matrix).diagnosis)


def test_building_from_source_in_prose_is_not_setup_py_missing_a_wheel(matrix: Matrix) -> None:
    said = triage("I get errors when building from source.\n", matrix).diagnosis
    assert all("found no prebuilt wheel" not in d.message for d in said)
