"""The static prediction on real wheels whose failure lies below the extension, or is counted
past the kept list, held against the real loader (`import torch`, then the load, in a child) and
`ldd -r`, beside the real CPU torch 2.13:

- intel-extension-for-pytorch 2.8.0: its _C loads libintel-ext-pt-cpu.so, which needs c10
  symbols this torch no longer defines: the import fails on that library's symbol;
- torchtext 0.18.0 (built for torch 2.3): _torchtext.so misses more symbols than the facts keep;
- torch-tensorrt 2.9.0 without its declared TensorRT requirements: libnvinfer_plugin.so.10 is
  theirs, not a wrong wheel (its RECORD quotes every path, as CSV may).

The wheels come from the package index; .ci/run downloads them into FADOCTOR_TEST_CACHE."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections import Counter
from pathlib import Path
from typing import List, Set, Tuple

import pytest
from tests.helpers.broken import environ_with_path, requires_torch
from tests.helpers.elf_fixtures import ldd_undefined, ldd_undefined_everywhere
from tests.test_static_real_wheels import cached, unpacked
from tests.test_static_torch_extensions import binaries, real_loads

from fadoctor.collect.run import collect
from fadoctor.collect.target import CollectOptions
from fadoctor.evaluate import evaluate
from fadoctor.facts.binaries import BinaryAnalysis
from fadoctor.facts.model import Facts
from fadoctor.matrix import load_matrix
from fadoctor.probes.binaries import KEPT_SYMBOLS
from fadoctor.probes.loader import LoaderContext, analyze
from fadoctor.report import Category, Finding

pytestmark = [pytest.mark.slow, requires_torch]

IPEX = "intel_extension_for_pytorch-2.8.0-cp311-cp311-manylinux_2_28_x86_64.whl"
TORCHTEXT = "torchtext-0.18.0-cp311-cp311-manylinux1_x86_64.whl"
TENSORRT = "torch_tensorrt-2.9.0-cp311-cp311-manylinux_2_28_x86_64.whl"
CONTIGUOUS = "_ZNK3c1010TensorImpl20is_contiguous_customENS_12MemoryFormatE"


def torch_lib() -> str:
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    return str(Path(spec.origin).parent / "lib")


def static(site: Path) -> Facts:
    return collect(CollectOptions(python=sys.executable, environ=environ_with_path(site), static=True))


def findings(facts: Facts, check_id: str, path: str) -> List[Finding]:
    report = evaluate(facts, load_matrix())
    check = next(c for c in report.checks if c.id == check_id)
    return [f for f in check.findings if f.evidence.get("path") == path]


def one(facts: Facts, suffix: str) -> BinaryAnalysis:
    [binary] = [b for b in binaries(facts) if b.file.path.endswith(suffix)]
    return binary


def ldd_all(path: Path) -> Set[Tuple[str, str]]:
    """Each (object, symbol) `ldd -r` reports undefined in `path` and the libraries it loads, Py*
    left out (ldd names a symbol once per relocation: a set)."""
    return {(os.path.realpath(obj), name) for obj, name in ldd_undefined_everywhere(path, torch_lib())
            if not name.startswith(("Py", "_Py"))}


@pytest.fixture(scope="module")
def ipex() -> Path:
    return unpacked(cached(IPEX))


def test_a_symbol_the_library_it_brings_misses_is_the_imports_error(ipex: Path) -> None:
    facts = static(ipex)
    binary = one(facts, "intel_extension_for_pytorch/_C.cpython-311-x86_64-linux-gnu.so")
    [real] = real_loads([binary.file.path], environ_with_path(ipex))
    assert binary.first_failure is not None and binary.first_failure.message == real
    assert binary.first_failure.name == CONTIGUOUS
    cpu = str(ipex / "intel_extension_for_pytorch" / "lib" / "libintel-ext-pt-cpu.so")
    assert binary.first_failure.needed_by == cpu and binary.predicts_import_failure
    # Every symbol ldd -r finds undefined in the closure, and in the same objects.
    oracle = ldd_all(Path(binary.file.path))
    assert binary.missing_symbol_count == len(oracle) and binary.missing_in is not None
    assert {os.path.realpath(p): n for p, n in binary.missing_in.items()} == dict(
        Counter(obj for obj, _ in oracle))
    assert binary.missing_in[cpu] >= 20 and len(binary.missing_in) == 2  # and libintel-ext-pt-python.so
    [finding] = findings(facts, "FAD131", binary.file.path)
    assert f"in {cpu}" in finding.message and "relocates before it" in finding.message
    assert finding.category == Category.TORCH_VERSION_MISMATCH
    assert f"needs {binary.missing_symbol_count} symbol(s)" in finding.message


def test_the_count_is_every_missing_symbol_not_the_kept_list(tmp_path: Path) -> None:
    site = unpacked(cached(TORCHTEXT))
    facts = static(site)
    binary = one(facts, "torchtext/_torchtext.so")
    oracle = ldd_undefined(Path(binary.file.path), torch_lib())
    missing = [s for s in oracle if not s[0].startswith(("Py", "_Py"))]
    direct = analyze(binary.file.path, LoaderContext(ld_library_path=torch_lib())).missing_symbols
    assert len(missing) > KEPT_SYMBOLS and binary.missing_symbol_count == len(missing) == len(direct)
    assert len(binary.missing_symbols) == KEPT_SYMBOLS
    [finding] = findings(facts, "FAD131", binary.file.path)
    assert f"needs {len(missing)} symbol(s)" in finding.message
    assert f"(6 of {len(missing)} shown)" in finding.message


def test_a_library_of_a_declared_requirement_not_installed_is_named_with_its_install(
        tmp_path: Path) -> None:
    site = unpacked(cached(TENSORRT))
    facts = static(site)
    lacking = [b for b in binaries(facts) if b.first_failure is not None
               and b.first_failure.name == "libnvinfer_plugin.so.10"]
    assert lacking and all(b.file.distribution == "torch_tensorrt" for b in lacking)
    [real] = real_loads([lacking[0].file.path], environ_with_path(site))
    assert "cannot open shared object file" in real
    [finding] = findings(facts, "FAD130", lacking[0].file.path)
    assert finding.category == Category.NOT_INSTALLED, finding.message
    assert "declares requirements that are not installed" in finding.message
    assert "tensorrt<10.14.0,>=10.13.0" in finding.message
    commands = [c for r in finding.remedies for c in r.commands]
    assert commands and " -m pip install " in commands[0] and "tensorrt<10.14.0,>=10.13.0" in commands[0]


def test_a_library_of_the_extensions_own_distribution_is_named_as_its_own() -> None:
    # torchtext 0.18.0's _torchtext.so needs libtorchtext.so, which lies in torchtext/lib/ (no
    # RPATH: torchtext loads it by path first). Its declared requirements (tqdm, requests, numpy)
    # are not installed here, but they are not whose library it is.
    site = unpacked(cached(TORCHTEXT))
    facts = static(site)
    binary = one(facts, "torchtext/_torchtext.so")
    own = str(site / "torchtext" / "lib" / "libtorchtext.so")
    assert binary.first_failure is not None and binary.first_failure.name == "libtorchtext.so"
    [real] = real_loads([binary.file.path], environ_with_path(site))
    assert real == binary.first_failure.message  # the load alone fails on it, as predicted
    assert [lib.beside for lib in binary.needed if lib.name == "libtorchtext.so"] == [own]
    [finding] = findings(facts, "FAD130", binary.file.path)
    assert finding.category == Category.WRONG_WHEEL, finding.message
    assert f"a library of torchtext itself ({own})" in finding.message
    assert "declares requirements" not in finding.message
