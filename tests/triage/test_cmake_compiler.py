"""CMake finding no compiler for a language its project enables, and a Mac named the ways people
write it (OSX, Macbooks, M2 Macs) beside flash-attention."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def test_cmake_without_a_cuda_compiler_points_at_nvcc(matrix: Matrix) -> None:
    found = top("CMake Error at CMakeLists.txt:12 (project):\n  No CMAKE_CUDA_COMPILER could be "
                "found.\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "CUDACXX" in said(found)


def test_cmake_without_a_cxx_compiler_on_linux_and_windows(matrix: Matrix) -> None:
    linux = top("CMake Error at CMakeLists.txt:2 (project):\n  No CMAKE_CXX_COMPILER could be "
                "found.\n", matrix)
    assert "build-essential" in said(linux)
    windows = top("C:\\Users\\me\\TransformerEngine> pip install .\nCMake Error at "
                  "CMakeLists.txt:5 (project):\n  No CMAKE_CXX_COMPILER could be found.\n", matrix)
    assert "Desktop development with C++" in said(windows)


def test_a_mac_written_as_osx_or_macbooks(matrix: Matrix) -> None:
    for words in ("OSX arm64", "our Macbooks", "M2 Macs"):
        found = top(f"pip install flash-attn fails on {words}\n", matrix)
        assert found.category == Category.PLATFORM_UNSUPPORTED, words


def test_cutlass_traits_missing_under_msvc_is_its_cplusplus_macro(matrix: Matrix) -> None:
    found = top("When compiling on Windows with MSVC, the following error occurs:\nerror: "
                "namespace \"cutlass::platform\" has no member \"is_unsigned_v\"\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "/Zc:__cplusplus" in said(found)
    assert any("NVCC_APPEND_FLAGS" in c for r in found.remedies for c in r.commands)


def test_msvc_without_the_windows_sdk_and_a_stray_cub(matrix: Matrix) -> None:
    text = ("crtdefs.h(10): fatal error C1083: Cannot open include file: 'corecrt.h': No such "
            "file or directory\nthrust/system/cuda/config.h(79): fatal error C1189: #error:  The "
            "version of CUB in your include path is not compatible with this release of Thrust.\n")
    found = top(text, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "Windows 11 SDK" in said(found)
    assert any("CUB_HOME" in r.summary for d in triage(text, matrix).diagnosis
               for r in d.remedies)
