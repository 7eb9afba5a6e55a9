"""The static analysis on a real flash-attention build: the vllm-flash-attn 2.6.2 wheel (built for
torch 2.4 and CUDA 12, old C++ ABI) installed without dependencies beside real torch 2.13 (CPU)
and beside real torch 2.14.1 (CUDA 13). The wheels come from the package index; .ci/run downloads
them into FADOCTOR_TEST_CACHE, and there their absence fails the tests instead of skipping them."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tests.helpers.broken import environ_with_path, requires_torch

from fadoctor.collect.run import collect
from fadoctor.collect.target import CollectOptions
from fadoctor.evaluate import evaluate
from fadoctor.facts.binaries import BinaryAnalysis
from fadoctor.facts.model import Facts, Family
from fadoctor.matrix import load_matrix
from fadoctor.probes.mangling import is_torch_symbol, string_abi
from fadoctor.report import Report

CACHE = os.environ.get("FADOCTOR_TEST_CACHE")
VLLM_WHEEL = "vllm_flash_attn-2.6.2-cp311-cp311-manylinux1_x86_64.whl"
TORCH_WHEEL = "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl"

pytestmark = [pytest.mark.slow, requires_torch, pytest.mark.skipif(
    sys.version_info[:2] != (3, 11), reason="the cached vllm-flash-attn wheel is a CPython 3.11 "
    "build: another Python does not find its extension module")]


def cached(name: str) -> Path:
    """A wheel from the test cache; in CI (FADOCTOR_TEST_CACHE set) it must be there."""
    if CACHE is None:
        pytest.skip("FADOCTOR_TEST_CACHE is not set (.ci/run sets it and downloads the wheels)")
    path = Path(CACHE) / name
    if not path.is_file():  # the same release under another platform tag (manylinux1 vs 2014)
        dist, version = name.split("-")[:2]
        same = sorted(Path(CACHE).glob(f"{dist}-{version}-*.whl"))
        path = same[0] if same else path
    assert path.is_file(), f"{path} is missing: .ci/run downloads it"
    return path


def unpacked(wheel: Path) -> Path:
    """The wheel's files, unpacked once next to it (a wheel is a zip laid out as site-packages)."""
    target = wheel.with_suffix(".unpacked")
    if not (target / ".done").exists():
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target)
        (target / ".done").write_text("")
    return target


def vllm_binary(facts: Facts) -> BinaryAnalysis:
    assert facts.binaries is not None and facts.binaries.data is not None
    [binary] = [b for b in facts.binaries.data if b.file.family == Family.VLLM_FA]
    return binary


def finding_messages(report: Report, check_id: str) -> str:
    check = next(c for c in report.checks if c.id == check_id)
    return "\n".join(f.message for f in check.findings)


@pytest.fixture(scope="module")
def vllm() -> Path:
    return unpacked(cached(VLLM_WHEEL))


def test_beside_cpu_torch_the_prediction_names_all_and_its_first_is_the_imports(
        vllm: Path) -> None:
    env = environ_with_path(vllm)
    facts = collect(CollectOptions(python=sys.executable, environ=env))
    binary = vllm_binary(facts)
    missing = [lib.name for lib in binary.needed if lib.path is None]
    assert "libcudart.so.12" in missing

    fa = facts.family(Family.VLLM_FA)
    assert fa is not None and fa.imported is not None and fa.imported.failure is not None
    error = fa.imported.failure.reason
    assert "cannot open shared object file" in error
    # The loader stops at its first missing library; it is the prediction's first one.
    assert error.startswith(f"{missing[0]}: cannot open")

    report = evaluate(facts, load_matrix())
    assert "the prediction matches the import (static: fails" in finding_messages(report, "FAD134")
    assert "needs libcudart.so.12" in finding_messages(report, "FAD130")


@pytest.fixture(scope="module")
def torch_cu13() -> Path:
    return unpacked(cached(TORCH_WHEEL))


def static_beside(site: Path, vllm: Path) -> Facts:
    env = environ_with_path(vllm, site)
    # torch 2.14.1 without its nvidia-* dependencies cannot be imported: --static never tries.
    return collect(CollectOptions(python=sys.executable, environ=env, static=True))


def test_beside_cuda13_torch_it_needs_cudart12_and_six_torch_symbols(torch_cu13: Path,
                                                                      vllm: Path) -> None:
    facts = static_beside(torch_cu13, vllm)
    assert facts.mode == "static"
    assert facts.files is not None and facts.files.data is not None
    torch_files = facts.files.data.torch
    assert torch_files is not None and torch_files.version == "2.14.1+cu130"
    assert torch_files.cxx11_abi is True

    binary = vllm_binary(facts)
    assert [lib.name for lib in binary.needed if lib.path is None] == ["libcudart.so.12"]
    torch_missing = [s.name for s in binary.missing_symbols if is_torch_symbol(s.name)]
    assert len(torch_missing) == 6, torch_missing
    assert sum(1 for s in torch_missing if string_abi(s) == 0) == 3
    assert all(s.demangled and s.demangled != s.name for s in binary.missing_symbols
               if s.name.startswith("_Z"))
    # Beside libcudart.so.13 nothing binds cudaX@libcudart.so.12 (versions matched as ld.so does).
    assert any(s.version == "libcudart.so.12" for s in binary.missing_symbols)

    report = evaluate(facts, load_matrix())
    symbols = finding_messages(report, "FAD131")
    assert "C++11 ABI = 0" in symbols and "_GLIBCXX_USE_CXX11_ABI = 1" in symbols


TRIPWIRE = """
import os, sys
def _record(event, args):
    if event == "import" and args[0].split(".")[0] in ("torch", "vllm_flash_attn", "flash_attn"):
        with open(os.environ["FADOCTOR_TRIPWIRE"], "a") as fh:
            fh.write("%d %s\\n" % (os.getpid(), args[0]))
sys.addaudithook(_record)
"""


def test_static_mode_imports_nothing(torch_cu13: Path, vllm: Path, tmp_path: Path) -> None:
    # A sitecustomize on the path runs in every interpreter started here, fadoctor's and its
    # worker's, and writes down any import of torch or flash-attention.
    (tmp_path / "sitecustomize.py").write_text(TRIPWIRE)
    log = tmp_path / "imports.log"
    env = environ_with_path(tmp_path, vllm, torch_cu13)
    env["FADOCTOR_TRIPWIRE"] = str(log)
    done = subprocess.run([sys.executable, "-m", "fadoctor", "check", "--static", "--python",
                           sys.executable, "--format", "json"], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert not log.exists(), log.read_text()
    # The tripwire works: the full check does import them.
    subprocess.run([sys.executable, "-m", "fadoctor", "check", "--python", sys.executable,
                    "--timeout", "120"], env=env, capture_output=True, timeout=600, check=False)
    assert "torch" in log.read_text()

