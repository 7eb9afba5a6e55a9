"""Versioned symbol lookup against the real loader: `ldd -r` is the oracle for which references
no library binds, on gcc-built libraries with version scripts."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Set, Tuple

import pytest
from tests.helpers.broken import requires_gcc
from tests.helpers.elf_fixtures import dlopen_in_child, ldd_undefined, linked, stub, version_script

from fadoctor.probes.elf import read_elf
from fadoctor.probes.loader import LoaderContext, Scoped, analyze, missing_symbols
from fadoctor.probes.symbols import SymbolIndex

pytestmark = requires_gcc

RUNTIME = "int rt_malloc(void) { return %d; }\nint rt_free(void) { return 0; }\n"
USE_RUNTIME = ("extern int rt_malloc(void); extern int rt_free(void);\n"
               "int use(void) { return rt_malloc() + rt_free(); }\n")


def runtime(folder: Path, major: int) -> Path:
    """A CUDA-runtime-like library: every symbol at the version named like its soname."""
    soname = f"libfakert.so.{major}"
    return stub(folder, soname, RUNTIME % major,
                version_script(folder, f"{soname} {{ global: rt_malloc; rt_free; local: *; }};\n"))


def missing(ext: Path, scope: List[Path]) -> Set[Tuple[str, Optional[str]]]:
    return {(s.name, s.version) for s in missing_symbols(read_elf(ext), scope)}


def test_a_reference_versioned_12_is_not_bound_by_13(tmp_path: Path) -> None:
    old, new = runtime(tmp_path / "12", 12), runtime(tmp_path / "13", 13)
    # other.so brings libfakert.so.13 into the load; libfakert.so.12 is nowhere to be found.
    other = linked(tmp_path / "13" / "libother.so", "int other(void) { return 1; }\n", [new],
                   "-Wl,-soname,libother.so")
    ext = linked(tmp_path / "ext.so", USE_RUNTIME, [old, other])
    expected = {("rt_malloc", "libfakert.so.12"), ("rt_free", "libfakert.so.12")}
    assert set(ldd_undefined(ext, str(tmp_path / "13"))) == expected
    analysis = analyze(ext, LoaderContext(ld_library_path=str(tmp_path / "13")))
    assert [m.needed for m in analysis.missing_libraries] == ["libfakert.so.12"]
    assert {(s.name, s.version) for s in analysis.missing_symbols} == expected
    assert missing(ext, [new]) == expected  # the name is defined there, at another version
    assert missing(ext, [old]) == set()


VERSIONS = "V1 { global: %s; local: *; };\nV2 { global: %s; } V1;\n"


@pytest.mark.parametrize("name, source, script, binds", [
    # The only definition is versioned and the default: an unversioned reference takes it.
    ("default-only", "int foo(void) { return 2; }\n", VERSIONS % ("bar", "foo"), True),
    # foo@V1 (index 2, the oldest) and foo@@V2: the oldest binds an unversioned reference.
    ("old-and-default", "int foo1(void) { return 1; }\nint foo2(void) { return 2; }\n"
     '__asm__(".symver foo1,foo@V1");\n__asm__(".symver foo2,foo@@V2");\n',
     VERSIONS % ("foo1", "foo2"), True),
    # Only a hidden (non-default) foo@V2: nothing binds an unversioned reference.
    ("hidden-only", "int foo2(void) { return 2; }\nint bar(void) { return 0; }\n"
     '__asm__(".symver foo2,foo@V2");\n', VERSIONS % ("bar", "foo2"), False),
])
def test_an_unversioned_reference_against_a_versioned_library(
        tmp_path: Path, name: str, source: str, script: str, binds: bool) -> None:
    plain = stub(tmp_path / "build", "libfoo.so.1", "int foo(void) { return 0; }\n")
    ext = linked(tmp_path / "ext.so", "extern int foo(void);\nint use(void) { return foo(); }\n",
                 [plain])
    runtime_lib = stub(tmp_path / "run", "libfoo.so.1", source, version_script(tmp_path, script))
    oracle = set(ldd_undefined(ext, str(runtime_lib.parent)))
    assert oracle == (set() if binds else {("foo", None)})
    assert missing(ext, [runtime_lib]) == oracle
    with SymbolIndex(runtime_lib) as index:
        assert index.defines("foo")  # some definition exists either way
    assert dlopen_in_child(ext, ld_library_path=str(runtime_lib.parent)).ok == binds


def test_a_versioned_reference_binds_an_unversioned_definition(tmp_path: Path) -> None:
    versioned = runtime(tmp_path / "build", 12)
    ext = linked(tmp_path / "ext.so", USE_RUNTIME, [versioned])
    # Another build of the soname with version information but the symbols left global
    # (index 1): a versioned reference binds them (check_match: hash 0, not hidden).
    loose = stub(tmp_path / "run", "libfakert.so.12", RUNTIME % 0 + "int other(void) { return 0; }\n",
                 version_script(tmp_path / "run", "OTHER_1 { global: other; };\n"))
    assert read_elf(loose, symbols=False).version_definitions is not None
    oracle = set(ldd_undefined(ext, str(loose.parent)))
    assert oracle == set()
    assert missing(ext, [Scoped(str(loose), frozenset({"libfakert.so.12"}))]) == oracle
