"""Mechanisms added in session 46, each on the message as its program prints it: a library asking
for an executable stack under glibc 2.41 (with a real shared object linked that way here)."""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category

CT2 = ("ImportError: libctranslate2-d3638643.so.4.4.0: cannot enable executable stack as shared "
       "object requires: Invalid argument\n")


def test_a_vendored_library_asking_for_an_executable_stack(matrix: Matrix) -> None:
    found = top(CT2, matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "ctranslate2 4.4.0" in found.message and "glibc 2.41" in found.message
    assert '"ctranslate2>=4.6.0"' in said(found)  # 4.6.0's wheels: GNU_STACK RW
    assert "--clear-execstack" in said(found)


def test_a_package_without_a_known_fix_gets_no_command_of_ours(matrix: Matrix) -> None:
    found = top("ImportError: libinspireface-0123abcd.so: cannot enable executable stack as "
                "shared object requires: Invalid argument\n", matrix)
    first = found.remedies[0]
    assert "Upgrade inspireface" in first.summary and first.commands == []


def test_an_unvendored_library_is_named_as_printed(matrix: Matrix) -> None:
    found = top("OSError: /opt/app/libmelon.so: cannot enable executable stack as shared object "
                "requires: Invalid argument\n", matrix)
    assert "libmelon.so (the package that ships it)" in found.message


@pytest.mark.skipif(shutil.which("gcc") is None or platform.system() != "Linux",
                    reason="needs gcc on Linux")
def test_a_library_linked_this_way_really_asks_for_it(tmp_path: Path, matrix: Matrix) -> None:
    """The premise, on a real shared object: linked with -z execstack its GNU_STACK is RWE; where
    this glibc refuses it (2.41 and newer), its own message is read as above."""
    (tmp_path / "x.c").write_text("int answer(void) { return 42; }\n")
    library = tmp_path / "libexec-0123abcd.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-z", "execstack", "-o", str(library),
                    str(tmp_path / "x.c")], check=True)
    headers = subprocess.run(["readelf", "-lW", str(library)], capture_output=True, text=True,
                             check=True).stdout
    assert any("GNU_STACK" in line and "RWE" in line for line in headers.splitlines())
    try:
        ctypes.CDLL(os.fspath(library))
    except OSError as error:  # glibc 2.41+: the refusal itself
        found = top(f"ImportError: {error}\n", matrix)
        assert found.category == Category.VERSION_CONFLICT and "executable stack" in found.message
    else:
        assert tuple(int(p) for p in platform.libc_ver()[1].split(".")[:2]) < (2, 41)


@pytest.mark.parametrize("line, built, loaded, why", [
    # torch 1.13+'s wording (two spaces after "compiled", as torch prints it)
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 5, 0) but "
     "found runtime version (8, 4, 1). PyTorch already comes bundled with cuDNN.",
     "8.5.0", "8.4.1", "older than torch's"),
    # torch 1.x's wording
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but "
     "linked against (7, 6, 5)", "8.3.2", "7.6.5", "another major"),
    # torch 0.4's, with cuDNN's integer versions
    ("RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against "
     "7005", "7.1.2", "7.0.5", "older than torch's"),
])
def test_torch_refusing_the_cudnn_found_first(line: str, built: str, loaded: str, why: str,
                                              matrix: Matrix) -> None:
    found = top(line + "\n", matrix)
    assert found.category == Category.CUDA_RUNTIME_MISMATCH
    assert f"built with cuDNN {built}" in found.message and f"cuDNN {loaded} first" in found.message
    assert why in found.message and "unset LD_LIBRARY_PATH" in said(found)
