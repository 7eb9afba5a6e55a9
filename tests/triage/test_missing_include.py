"""A source that uses a standard name without its `#include`, compiled for real: gcc (in both of
its quoting locales) and nvcc print their own errors, triage names the header, and the source
with the remedy's line added compiles. Also nvcc refusing a C++ standard it does not know, the
table's headers checked against the compiler, and the generator reproducing the table where the
toolchain is the one it was generated with."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

import pytest
import yaml
from tests.helpers.nvcc_run import refused
from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_include import header_for

ROOT = Path(__file__).resolve().parents[2]
GXX = shutil.which("g++")
NVCC = shutil.which("nvcc")
needs_gxx = pytest.mark.skipif(GXX is None, reason="no g++ on PATH")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")


def _compile(compiler: str, source: Path, env: Dict[str, str]) -> Tuple[int, str]:
    done = subprocess.run([compiler, "-c", source.name, "-o", source.stem + ".o"],
                          cwd=source.parent, capture_output=True, text=True, env=env,
                          timeout=300)
    return done.returncode, done.stderr


def _proven(compiler: str, source: Path, matrix: Matrix, header: str, name: str,
            locale: str = "C") -> None:
    """The source fails, triage's top finding names the header, and the source with the
    remedy's line first compiles."""
    env = {**os.environ, "LC_ALL": locale, "LANG": locale}
    rc, err = _compile(compiler, source, env)
    assert rc != 0, err
    found = top(err, matrix)
    assert found.category == Category.BUILD_TOOLCHAIN, (err, found.message)
    assert name in found.message and header in found.message, found.message
    assert f"#include {header}" in said(found) and source.name in said(found)
    line = next(r.code for r in found.remedies if r.code)
    source.write_text(f"{line}\n{source.read_text()}")
    rc, err = _compile(compiler, source, env)
    assert rc == 0, err


@needs_gxx
@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])  # straight quotes, typographic quotes
def test_gcc_undeclared_macro_and_type(tmp_path: Path, matrix: Matrix, locale: str) -> None:
    source = tmp_path / "knn.cpp"
    source.write_text("#include <vector>\nfloat far() { return FLT_MAX; }\n")
    _proven(str(GXX), source, matrix, "<cfloat>", "FLT_MAX", locale)
    typed = tmp_path / "ids.cpp"
    typed.write_text("#include <vector>\nuint32_t ids[4];\n")
    _proven(str(GXX), typed, matrix, "<cstdint>", "uint32_t", locale)


@needs_gxx
def test_gcc_std_member(tmp_path: Path, matrix: Matrix) -> None:
    source = tmp_path / "lim.cpp"
    source.write_text("#include <cstdio>\nint most() { return std::numeric_limits<int>::max(); }\n")
    _proven(str(GXX), source, matrix, "<limits>", "numeric_limits")


@needs_nvcc
def test_nvcc_thrust_algorithm_and_macro(tmp_path: Path, matrix: Matrix) -> None:
    source = tmp_path / "simple_knn.cu"
    source.write_text("#include <thrust/device_ptr.h>\n"
                      "void fill(float *p, int n) {\n"
                      "  thrust::sequence(thrust::device_pointer_cast(p),\n"
                      "                   thrust::device_pointer_cast(p) + n);\n}\n")
    _proven(str(NVCC), source, matrix, "<thrust/sequence.h>", "thrust::sequence")
    plain = tmp_path / "bound.cu"
    plain.write_text("__global__ void k(float *x) { x[threadIdx.x] = FLT_MAX; }\n")
    _proven(str(NVCC), plain, matrix, "<cfloat>", "FLT_MAX")


@pytest.mark.parametrize("line,header", [
    # MSVC's and clang's own forms (no such compiler on this machine)
    ("simple_knn.cu(90): error C2065: 'FLT_MAX': undeclared identifier", "<cfloat>"),
    ("ops.cpp(12): error C2039: 'runtime_error': is not a member of 'std'", "<stdexcept>"),
    ("ops.cpp:12:5: error: use of undeclared identifier 'INT_MAX'", "<climits>"),
    ("ops.cpp:3:10: error: no template named 'numeric_limits' in namespace 'std'", "<limits>"),
])
def test_other_compilers_forms(line: str, header: str, matrix: Matrix) -> None:
    found = top(f"building 'simple_knn._C' extension\n{line}\nerror: command failed\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and header in said(found)


def test_a_name_no_standard_header_declares_is_not_this(matrix: Matrix) -> None:
    text = 'kernel.cu(7): error: identifier "AT_CHECK_FOO" is undefined\n'
    result = triage(text, matrix)
    assert all("without including" not in d.message for d in result.diagnosis)
    assert header_for("AT_CHECK_FOO", None) is None and header_for("sequence", "thrust")


@needs_nvcc
def test_nvcc_refuses_a_standard(tmp_path: Path, matrix: Matrix) -> None:
    found = top(refused(tmp_path, "-std=c++26"), matrix)
    assert found.category == Category.BUILD_TOOLCHAIN and "-std=c++26" in found.message
    assert "nvcc --version" in said(found)


def test_nvcc_before_cxx17_names_cuda_11(matrix: Matrix) -> None:
    text = ("compile wkv_cuda failed when running \"python chat.py\":\n"
            "nvcc fatal   : Value 'c++17' is not defined for option 'std'\n")
    found = top(text, matrix)
    assert "CUDA 11.0" in found.message and "11.0 or newer" in said(found)


@needs_gxx
def test_table_headers_declare_their_names(tmp_path: Path) -> None:
    """The generated table against the compiler: each name compiles with only its header."""
    uses = {"FLT_MAX": "double v = FLT_MAX;", "DBL_EPSILON": "double v = DBL_EPSILON;",
            "INT_MAX": "int v = INT_MAX;", "uint32_t": "uint32_t v = 0;",
            "memcpy": "auto v = &memcpy;", "printf": "auto v = &printf;",
            "numeric_limits": "int v = std::numeric_limits<int>::max();",
            "runtime_error": "std::runtime_error v(\"x\");", "vector": "std::vector<int> v;"}
    for name, use in uses.items():
        header = header_for(name, "std")
        assert header, name
        (tmp_path / "t.cpp").write_text(f"#include {header}\nvoid f() {{ {use} (void)v; }}\n")
        rc, err = _compile(str(GXX), tmp_path / "t.cpp", dict(os.environ))
        assert rc == 0, (name, header, err)


def _thrust_version() -> str:
    """The Thrust of the CUDA toolkit the generator would read ("" where there is none)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_std_headers
    try:
        return gen_std_headers._thrust_version(gen_std_headers._nvcc_include())
    except SystemExit:
        return ""


@needs_gxx
def test_generator_reproduces_the_table() -> None:
    """Where this machine's g++ and Thrust are the ones the table names, the generator
    reproduces it byte for byte."""
    source = yaml.safe_load((ROOT / "data" / "std_headers.yaml").read_text())["source"]
    gxx = subprocess.run([str(GXX), "--version"], capture_output=True, text=True).stdout
    version = re.search(r"(\d+\.\d+\.\d+)", gxx.splitlines()[0])
    if not version or version.group(1) not in source["c"] or \
            f"Thrust {_thrust_version()} " not in source["thrust"]:
        pytest.skip("another g++ or Thrust than the table's")
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_std_headers.py"), "--check"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
