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


def test_asking_for_a_wheel_no_release_publishes(matrix: Matrix) -> None:
    # written for this test, in the Chinese prose of such questions ("torch version is 2.10.0",
    # "I see no compiled package for torch 2.10.0")
    text = ("这要求torch版本为2.10.0\uff0c但是对于flash attn 2.8.3版本来说\uff0c我没有看到可以支持"
            "torch2.10.0的编译包\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.WRONG_WHEEL
    said = " ".join(c for r in top.remedies for c in [r.summary, *r.commands])
    assert "flash-attn==2.8.3 --no-build-isolation" in said
    assert "FLASH_ATTENTION_FORCE_BUILD=TRUE" in said


def test_a_torch_with_official_wheels_is_not_this_case(matrix: Matrix) -> None:
    text = "Where is the flash-attn 2.8.3 wheel for torch 2.7.1? I use pip.\n"
    assert all(d.category != Category.WRONG_WHEEL or "no wheel to find" not in d.message
               for d in triage(text, matrix).diagnosis)
