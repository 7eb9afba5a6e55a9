"""FAD130/FAD131 on facts whose failure lies in a library the extension brings, whose missing
symbols outnumber the kept list, or whose library belongs to a declared requirement that is not
installed (the real wheels of each: tests/test_static_closure_wheels.py)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from tests.checks.test_binary import SITE, base, problems, with_binaries

from fadoctor.facts.binaries import BinaryAnalysis, ExtensionFile, MissingSymbol, NeededLibrary
from fadoctor.facts.model import Distribution
from fadoctor.matrix import Matrix

EXT = f"{SITE}/pkg/_C.so"
LIB = f"{SITE}/pkg/lib/libpkg-cpu.so"
C10 = "_ZNK3c1010TensorImpl20is_contiguous_customENS_12MemoryFormatE"


def symbols(count: int, kept: int, needed_by: str) -> BinaryAnalysis:
    return BinaryAnalysis(
        file=ExtensionFile(path=EXT, distribution="pkg", version="1.0"),
        needed=[NeededLibrary(name="libc10.so", path=f"{SITE}/torch/lib/libc10.so", how="loaded")],
        missing_symbols=[MissingSymbol(name=f"{C10}{i}" if i else C10, needed_by=needed_by)
                         for i in range(kept)],
        missing_symbol_count=count, consequence_count=0, missing_in={needed_by: count})


def test_the_library_whose_symbols_are_missing_is_named(build: ModuleType, matrix: Matrix) -> None:
    facts = with_binaries(base(build, []), symbols(22, 22, LIB))
    [finding] = problems("FAD131", facts, matrix)
    assert "needs 22 symbol(s)" in finding.message and f"22 in {LIB}" in finding.message
    assert finding.evidence["missing_in"] == {LIB: 22}


def test_the_count_is_every_missing_symbol_not_the_kept_ones(build: ModuleType, matrix: Matrix) -> None:
    facts = with_binaries(base(build, []), symbols(76, 50, EXT))
    [finding] = problems("FAD131", facts, matrix)
    assert "needs 76 symbol(s)" in finding.message and "(6 of 76 shown)" in finding.message
    assert "relocates before it" not in finding.message  # all are the extension's own


def test_older_facts_count_what_they_kept(build: ModuleType, matrix: Matrix) -> None:
    binary = symbols(76, 50, EXT).model_copy(update={"consequence_count": None, "missing_in": None})
    [finding] = problems("FAD131", with_binaries(base(build, []), binary), matrix)
    assert "needs 76 symbol(s)" in finding.message


def declaring(build: ModuleType, requires: list[str], *installed: Distribution) -> Any:
    binary = BinaryAnalysis(
        file=ExtensionFile(path=EXT, distribution="pkg_trt", version="2.9.0"),
        needed=[NeededLibrary(name="libnvinfer_plugin.so.10")])
    facts = with_binaries(base(build, []), binary)
    dists = [*facts.packages.data.distributions,
             Distribution(name="pkg-trt", version="2.9.0", requires=requires), *installed]
    return facts.model_copy(update={"packages": build.packages(*dists)})


def test_a_declared_requirement_not_installed_is_named_with_its_install(
        build: ModuleType, matrix: Matrix) -> None:
    facts = declaring(build, ["torch>=2.9", "tensorrt<10.14.0,>=10.13.0",
                              "gpu-only; sys_platform == 'win32'"])
    [finding] = problems("FAD130", facts, matrix)
    assert finding.category == "not_installed" and "tensorrt<10.14.0,>=10.13.0" in finding.message
    assert "gpu-only" not in finding.message  # its marker does not apply here
    assert [c for r in finding.remedies for c in r.commands] == ['pip install "tensorrt<10.14.0,>=10.13.0"']


def test_with_every_declared_requirement_installed_it_stays_unexplained(
        build: ModuleType, matrix: Matrix) -> None:
    facts = declaring(build, ["tensorrt<10.14.0,>=10.13.0"], Distribution(name="tensorrt", version="10.13.3"))
    [finding] = problems("FAD130", facts, matrix)
    assert finding.category == "wrong_wheel"
