"""The undefined symbols of the libraries an extension brings, bound as ld.so binds them: gcc-built
bundles (an extension, the libraries it ships in lib/, a torch-like base library) analysed
statically, then dlopened RTLD_NOW in a child interpreter whose error is the oracle."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.helpers.broken import requires_gcc
from tests.helpers.elf_fixtures import dlopen_in_child, linked, stub

from fadoctor.probes.loader import LoaderContext, analyze, library_info, preload_map

pytestmark = requires_gcc

BASE = "void base_old(void) {}\nvoid base_kept(void) {}\n"  # what the installed "torch" defines
# Like libintel-ext-pt-cpu.so: built against a newer base, it needs base_new, which is gone.
DEEP = ("extern void base_old(void); extern void base_new(void); extern void from_root(void);\n"
        "void deep(void) { base_old(); base_new(); from_root(); }\n")
MID = "extern void deep(void); extern void mid_missing(void);\nvoid mid(void) { deep(); mid_missing(); }\n"
ROOT = "extern void mid(void); extern void base_kept(void);\nvoid from_root(void) {}\n" \
       "void run(void) { mid(); base_kept(); }\n"


@dataclass(frozen=True)
class Bundle:
    base: Path  # the "torch" library, in its own folder
    deep: Path
    mid: Path
    ext: Path  # the extension, needing lib/libmid.so and the base library


def bundle(root: Path, deep_source: str = DEEP, mid_source: str = MID) -> Bundle:
    base = stub(root / "torch" / "lib", "libbase.so", BASE)
    lib = root / "pkg" / "lib"
    deep = linked(lib / "libdeep.so", deep_source, [base], "-Wl,-soname,libdeep.so",
                  f"-Wl,-rpath,{base.parent}")
    mid = linked(lib / "libmid.so", mid_source, [deep], "-Wl,-soname,libmid.so", "-Wl,-rpath,$ORIGIN")
    ext = linked(root / "pkg" / "_C.so", ROOT, [mid, base], "-Wl,-rpath,$ORIGIN/lib",
                 f"-Wl,-rpath,{base.parent}")
    return Bundle(base, deep, mid, ext)


def message(analysis_path: str, name: str) -> str:
    return f"{analysis_path}: undefined symbol: {name}"


def test_the_symbols_of_the_libraries_it_brings_are_bound(tmp_path: Path) -> None:
    """The extension's own symbols all bind; two of the libraries it brings miss one each. The
    loader relocates the deepest first: its missing symbol is the import's error."""
    b = bundle(tmp_path)
    analysis = analyze(b.ext, LoaderContext())
    missing = [(s.name, s.needed_by) for s in analysis.missing_symbols]
    assert sorted(missing) == sorted([("base_new", str(b.deep)), ("mid_missing", str(b.mid))])
    assert missing[0] == ("base_new", str(b.deep))  # relocated before libmid.so, which needs it
    real = dlopen_in_child(b.ext)
    assert not real.ok and real.error == message(str(b.deep), "base_new")
    assert not analysis.loadable


def test_a_librarys_symbol_the_extension_defines_binds(tmp_path: Path) -> None:
    """libdeep.so's from_root is defined by the extension itself: the dependency's lookup scope
    is the extension's whole load closure, the extension first."""
    b = bundle(tmp_path, DEEP.replace(" base_new();", ""), MID.replace(" mid_missing();", ""))
    analysis = analyze(b.ext, LoaderContext())
    assert analysis.missing_symbols == () and analysis.loadable
    assert dlopen_in_child(b.ext).ok


def test_an_already_loaded_library_is_not_bound_again(tmp_path: Path) -> None:
    """A library already in the process (torch's) was relocated when it was loaded: its
    undefined references are not the extension's to fail on."""
    b = bundle(tmp_path)
    context = LoaderContext(preloaded=preload_map([b.deep, b.base]))
    missing = {(s.name, s.needed_by) for s in analyze(b.ext, context).missing_symbols}
    assert missing == {("mid_missing", str(b.mid))}


@pytest.mark.parametrize("order", ["mid-first", "deep-first"])
def test_the_first_failure_follows_the_relocation_order(tmp_path: Path, order: str) -> None:
    """Two sibling libraries that both miss a symbol: the extension needs them in either order,
    and the loader names the one its depth-first sort relocates first."""
    base = stub(tmp_path / "base", "libbase.so", BASE)
    one, two = (linked(tmp_path / "lib" / f"lib{n}.so", f"extern void gone_{n}(void);\nvoid {n}(void) "
                       f"{{ gone_{n}(); }}\n", [base], f"-Wl,-soname,lib{n}.so", f"-Wl,-rpath,{base.parent}")
                for n in ("one", "two"))
    libs = [one, two] if order == "mid-first" else [two, one]
    ext = linked(tmp_path / "_C.so", "extern void one(void); extern void two(void);\n"
                 "void run(void) { one(); two(); }\n", libs, "-Wl,-rpath,$ORIGIN/lib",
                 f"-Wl,-rpath,{base.parent}")
    analysis = analyze(ext, LoaderContext())
    first = analysis.missing_symbols[0]
    real = dlopen_in_child(ext)
    assert not real.ok and real.error == message(str(first.needed_by), first.name)
    assert first.needed_by == str(libs[-1])  # the search starts from the last one loaded
    assert {s.name for s in analysis.missing_symbols} == {"gone_one", "gone_two"}


def test_library_symbols_are_read_once_per_file_state(tmp_path: Path) -> None:
    from fadoctor.probes.binding import library_symbols

    b = bundle(tmp_path)
    assert library_symbols(b.deep) is library_symbols(b.deep)
    assert {s.name for s in library_symbols(b.deep).undefined} >= {"base_new", "from_root"}
    assert library_info(b.deep).undefined == ()  # the cheap read stays cheap
    os.utime(b.deep, ns=(1, 1))
    assert library_symbols(b.deep).undefined  # re-read after a change
