"""The ld.so model against the real loader: each fixture is built with gcc, analysed statically,
then dlopened (RTLD_NOW) in a child interpreter whose outcome and mapped files are the oracle."""

from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, List, Optional

import pytest
from tests.helpers.broken import C10_ERROR_CXX11_ABI, requires_gcc
from tests.helpers.elf_fixtures import (
    TORCH_ABSENT,
    TORCH_DEFINED,
    dlopen_in_child,
    extension_source,
    fake_libtorch_source,
    linked,
    patched,
    stub,
    version_script,
    write_ld_cache,
)

from fadoctor.probes.elf import PathLike, read_elf
from fadoctor.probes.loader import (
    How,
    LoaderContext,
    MissingLibrary,
    Resolution,
    UnmetVersion,
    analyze,
    library_info,
    missing_symbols,
    preload_map,
    resolve,
    unmet_versions,
)

pytestmark = requires_gcc

DEP = "int dep(void) { return %d; }\n"
USE_DEP = "extern int dep(void);\nint use(void) { return dep(); }\n"
OLD_RPATH, NEW_RUNPATH = "-Wl,--disable-new-dtags", "-Wl,--enable-new-dtags"


@dataclass(frozen=True)
class World:
    root: Path
    a: Path  # a/libdep.so.1
    b: Path  # b/libdep.so.1, the same soname in another directory


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("world")
    return World(root, stub(root / "a", "libdep.so.1", DEP % 1), stub(root / "b", "libdep.so.1", DEP % 2))


def isolated(**fields: Any) -> LoaderContext:
    """A context that sees only what the test gives it: no cache, no default directories."""
    return LoaderContext(**{"ld_cache": None, "default_dirs": (), **fields})


def dep_of(ext: Path, context: LoaderContext) -> Resolution:
    return next(r for r in resolve(read_elf(ext), context) if r.needed == "libdep.so.1")


def real(path: Optional[PathLike]) -> Optional[str]:
    return None if path is None else os.path.realpath(path)


def mapped_dep(ext: Path, **how: Any) -> List[Optional[str]]:
    """The libdep.so.1 files the real loader mapped for `ext`."""
    return [real(path) for path in dlopen_in_child(ext, **how).mapped_named("libdep.so.1")]


def test_rpath_is_searched_before_ld_library_path(world: World, tmp_path: Path) -> None:
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a], f"-Wl,-rpath,{world.a.parent}", OLD_RPATH)
    found = dep_of(ext, isolated(ld_library_path=str(world.b.parent)))
    assert (found.path, found.how) == (str(world.a), How.RPATH)
    assert mapped_dep(ext, ld_library_path=str(world.b.parent)) == [real(world.a)]


def test_ld_library_path_is_searched_before_runpath(world: World, tmp_path: Path) -> None:
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a], f"-Wl,-rpath,{world.a.parent}", NEW_RUNPATH)
    found = dep_of(ext, isolated(ld_library_path=f"/nonexistent:{world.b.parent}"))
    assert (found.path, found.how) == (str(world.b), How.LD_LIBRARY_PATH)
    assert mapped_dep(ext, ld_library_path=str(world.b.parent)) == [real(world.b)]
    alone = dep_of(ext, isolated())
    assert (alone.path, alone.how) == (str(world.a), How.RUNPATH)


@pytest.mark.parametrize("token", ["$ORIGIN", "${ORIGIN}"])
def test_origin_is_the_objects_directory(world: World, tmp_path: Path, token: str) -> None:
    ext = linked(world.root / "ext" / f"ext{len(token)}.so", USE_DEP, [world.a],
                 f"-Wl,-rpath,{token}/../b", NEW_RUNPATH)
    found = dep_of(ext, isolated())
    assert (real(found.path), found.how) == (real(world.b), How.RUNPATH)
    assert dlopen_in_child(ext).mapped_named("libdep.so.1") == [real(world.b)]


def test_runpath_makes_the_loader_ignore_rpath(world: World, tmp_path: Path) -> None:
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a])
    info = replace(read_elf(ext), rpath=(str(world.a.parent),), runpath=(str(world.b.parent),))
    assert resolve(info, isolated())[0] == Resolution("libdep.so.1", str(world.b), How.RUNPATH)
    assert resolve(replace(info, runpath=()), isolated())[0].how is How.RPATH


def test_lib_and_platform_tokens(world: World, tmp_path: Path) -> None:
    target = stub(tmp_path / "mylib" / "myplat", "libdep.so.1", DEP % 3)
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a])
    info = replace(read_elf(ext), rpath=(f"{tmp_path}/$LIB/${{PLATFORM}}",))
    found = resolve(info, isolated(lib="mylib", platform="myplat"))[0]
    assert (found.path, found.how) == (str(target), How.RPATH)


def test_an_empty_ld_library_path_entry_is_the_current_directory(world: World, tmp_path: Path) -> None:
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a])
    found = dep_of(ext, isolated(ld_library_path=":", cwd=str(world.b.parent)))
    assert (real(found.path), found.how) == (real(world.b), How.LD_LIBRARY_PATH)
    loaded = dlopen_in_child(ext, ld_library_path=":", cwd=world.b.parent)
    assert loaded.mapped_named("libdep.so.1") == [real(world.b)]


def test_an_already_loaded_library_wins_by_name_or_soname(world: World, tmp_path: Path) -> None:
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a], f"-Wl,-rpath,{world.a.parent}", OLD_RPATH)
    renamed = stub(tmp_path / "other", "libdep.so.1", DEP % 4, file_name="libdep-custom.so")
    preloaded = preload_map([renamed])
    assert preloaded == {"libdep-custom.so": str(renamed), "libdep.so.1": str(renamed)}
    assert dep_of(ext, isolated(preloaded=preloaded)) == Resolution("libdep.so.1", str(renamed), How.LOADED)
    assert dlopen_in_child(ext, preload=[renamed]).mapped_named("libdep.so.1") == []  # rpath not used


def test_cache_then_default_directories_and_nodeflib(world: World, tmp_path: Path) -> None:
    system = tmp_path / "system"
    in_system = stub(system, "libdep.so.1", DEP % 5)
    cache = write_ld_cache(tmp_path / "ld.so.cache", [("libdep.so.1", str(world.a))], "new")
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a])
    context = isolated(ld_cache=str(cache), default_dirs=(str(system),))
    assert dep_of(ext, context) == Resolution("libdep.so.1", str(world.a), How.LD_CACHE)
    without_cache = replace(context, ld_cache=None)
    assert dep_of(ext, without_cache) == Resolution("libdep.so.1", str(in_system), How.DEFAULT)
    nodeflib = replace(read_elf(ext), nodeflib=True)
    assert resolve(nodeflib, context)[0].how is How.LD_CACHE  # the cached file is outside `system`
    system_cache = write_ld_cache(tmp_path / "ld.so.cache.2", [("libdep.so.1", str(in_system))], "new")
    assert resolve(nodeflib, replace(context, ld_cache=str(system_cache)))[0].path is None


def test_candidates_of_another_class_or_machine_are_skipped(world: World, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    patched(world.a, bad / "libdep.so.1", 18, b"\xb7\x00" if os.uname().machine != "aarch64" else b"\x3e\x00")
    patched(world.a, tmp_path / "bad32" / "libdep.so.1", 4, b"\x01")  # ELFCLASS32
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a], f"-Wl,-rpath,{bad}:{tmp_path / 'bad32'}", OLD_RPATH)
    found = dep_of(ext, isolated(ld_library_path=str(world.b.parent)))
    assert (found.path, found.how) == (str(world.b), How.LD_LIBRARY_PATH)
    assert found.rejected == (str(bad / "libdep.so.1"), str(tmp_path / "bad32" / "libdep.so.1"))
    assert mapped_dep(ext, ld_library_path=str(world.b.parent)) == [real(world.b)]


def test_a_non_elf_candidate_ends_the_search(world: World, tmp_path: Path) -> None:
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "libdep.so.1").write_text("INPUT(libdep.so.0)\n" * 10)
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a], f"-Wl,-rpath,{tmp_path / 'text'}", OLD_RPATH)
    found = dep_of(ext, isolated(ld_library_path=str(world.b.parent)))
    assert (found.path, found.rejected) == (None, (str(tmp_path / "text" / "libdep.so.1"),))
    assert not dlopen_in_child(ext, ld_library_path=str(world.b.parent)).ok


def test_a_needed_path_is_opened_as_such(tmp_path: Path) -> None:
    nameless = linked(tmp_path / "libnameless.so", DEP % 6, [])  # no soname: linked by its path
    ext = linked(tmp_path / "ext.so", USE_DEP, [nameless])
    found = resolve(read_elf(ext), isolated())[0]
    assert (found.needed, found.path, found.how) == (str(nameless), str(nameless), How.PATH)
    assert dlopen_in_child(ext).ok


def test_rpath_reaches_dependencies_and_runpath_does_not(world: World, tmp_path: Path) -> None:
    mid = stub(tmp_path / "mid", "libmid.so.1", "extern int dep(void);\nint mid(void) { return dep(); }\n",
               "-Wl,--no-as-needed", str(world.a))
    source = "extern int mid(void);\nint top(void) { return mid(); }\n"
    search = f"-Wl,-rpath,{mid.parent}:{world.a.parent}"
    with_rpath = linked(tmp_path / "rpath.so", source, [mid], search, OLD_RPATH)
    with_runpath = linked(tmp_path / "runpath.so", source, [mid], search, NEW_RUNPATH)
    context = LoaderContext(ld_library_path="")
    assert analyze(with_rpath, context).missing_libraries == ()
    assert dlopen_in_child(with_rpath).ok
    assert analyze(with_runpath, context).missing_libraries == (MissingLibrary("libdep.so.1", str(mid)),)
    loaded = dlopen_in_child(with_runpath)
    assert not loaded.ok and "libdep.so.1: cannot open shared object file" in loaded.error


def test_the_executables_rpath_is_searched_too(world: World, tmp_path: Path) -> None:
    exe = tmp_path / "bin" / "loader"
    exe.parent.mkdir()
    (tmp_path / "loader.c").write_text(
        "#include <dlfcn.h>\n#include <stdio.h>\n"
        "int main(int c, char **v) { void *h = dlopen(v[1], RTLD_NOW);\n"
        "  puts(h ? \"ok\" : dlerror()); return !h; }\n")
    subprocess.run(["gcc", "-o", str(exe), str(tmp_path / "loader.c"), "-ldl",
                    f"-Wl,-rpath,$ORIGIN/../{world.a.parent.name}", OLD_RPATH], check=True, cwd=tmp_path)
    os.symlink(world.a.parent, tmp_path / world.a.parent.name)
    ext = linked(tmp_path / "ext.so", USE_DEP, [world.a])
    context = replace(LoaderContext.for_interpreter(exe, environ={}), ld_cache=None, default_dirs=())
    assert [real(p) for p in context.executable_rpath] == [real(world.a.parent)]
    assert dep_of(ext, context).how is How.RPATH
    assert subprocess.run([str(exe), str(ext)], capture_output=True, text=True).stdout == "ok\n"


def test_for_interpreter_reads_the_environment() -> None:
    import sys

    context = LoaderContext.for_interpreter(sys.executable, environ={"LD_LIBRARY_PATH": "/x:/y"})
    assert context.ld_library_path == "/x:/y"
    runpath = read_elf(os.path.realpath(sys.executable), symbols=False).runpath
    assert context.executable_rpath == () or not runpath  # DT_RUNPATH hides the executable's RPATH


@dataclass(frozen=True)
class Torchish:
    libtorch: Path
    good: Path
    bad: Path


@pytest.fixture(scope="module")
def torchish(tmp_path_factory: pytest.TempPathFactory) -> Torchish:
    root = tmp_path_factory.mktemp("torchish")
    libtorch = stub(root / "torch" / "lib", "libtorch_cpu.so", fake_libtorch_source())
    rpath = ("-Wl,-rpath,$ORIGIN/../torch/lib", NEW_RUNPATH)
    good = linked(root / "ext" / "good.so", extension_source(TORCH_DEFINED, ()), [libtorch], *rpath)
    bad = linked(root / "ext" / "bad.so", extension_source(TORCH_DEFINED, TORCH_ABSENT), [libtorch], *rpath)
    return Torchish(libtorch, good, bad)


def test_symbols_a_library_defines_are_found(torchish: Torchish) -> None:
    analysis = analyze(torchish.good, LoaderContext())
    assert analysis.loadable, analysis
    (found, *_) = analysis.resolutions
    assert (found.needed, found.how) == ("libtorch_cpu.so", How.RUNPATH)
    assert real(found.path) == real(torchish.libtorch)
    assert real(torchish.libtorch) in map(real, analysis.libraries)
    assert dlopen_in_child(torchish.good).ok


def test_symbols_no_library_defines_are_missing(torchish: Torchish) -> None:
    analysis = analyze(torchish.bad, LoaderContext())
    assert {s.name for s in analysis.missing_symbols} == set(TORCH_ABSENT)  # not the weak, not Py*
    demangled = {s.name: s.demangled for s in analysis.missing_symbols}
    assert demangled[C10_ERROR_CXX11_ABI].startswith("c10::Error::Error(c10::SourceLocation, std::__cxx11::")
    loaded = dlopen_in_child(torchish.bad)
    assert not loaded.ok
    assert any(f"undefined symbol: {name}" in loaded.error for name in TORCH_ABSENT)


def test_missing_symbols_with_the_library_preloaded(torchish: Torchish) -> None:
    # missing_symbols is ld.so's lookup alone: Py* symbols are the interpreter's only in analyze.
    info = read_elf(torchish.bad)
    assert {s.name for s in missing_symbols(info, [torchish.libtorch])} == {*TORCH_ABSENT, "PyErr_Clear"}
    assert missing_symbols(info, []) == info.undefined


FAKE_NEW = "FAKE_1.0 { global: fake_old; local: *; };\nFAKE_2.32 { global: fake_new; } FAKE_1.0;\n"
FAKE_OLD = "FAKE_1.0 { global: fake_old; fake_new; local: *; };\n"
USE_FAKE = ("extern void fake_old(void); extern void fake_new(void);\n"
            "void run(void) { fake_old(); fake_new(); }\n")


def test_a_version_the_found_library_lacks_is_unmet(tmp_path: Path) -> None:
    new = stub(tmp_path / "new", "libfake.so.6", "void fake_old(void) {}\nvoid fake_new(void) {}\n",
               version_script(tmp_path, FAKE_NEW))
    old = stub(tmp_path / "old", "libfake.so.6", "void fake_old(void) {}\nvoid fake_new(void) {}\n",
               version_script(tmp_path, FAKE_OLD))  # an older release: fake_new exists, unversioned 2.32
    ext = linked(tmp_path / "ext.so", USE_FAKE, [new])
    analysis = analyze(ext, LoaderContext(ld_library_path=str(old.parent)))
    assert analysis.unmet_versions == (UnmetVersion(str(ext), "libfake.so.6", "FAKE_2.32", str(old)),)
    # The name is there, but not at that version: ld.so binds nothing ("symbol fake_new version
    # FAKE_2.32 not defined in file libfake.so.6 with link time reference").
    assert [(s.name, s.version) for s in analysis.missing_symbols] == [("fake_new", "FAKE_2.32")]
    loaded = dlopen_in_child(ext, ld_library_path=str(old.parent))
    assert not loaded.ok and "version `FAKE_2.32' not found" in loaded.error
    assert analyze(ext, LoaderContext(ld_library_path=str(new.parent))).loadable
    assert dlopen_in_child(ext, ld_library_path=str(new.parent)).ok


def test_an_unversioned_library_meets_no_version_need(tmp_path: Path) -> None:
    new = stub(tmp_path / "new", "libfake.so.6", "void fake_old(void) {}\nvoid fake_new(void) {}\n",
               version_script(tmp_path, FAKE_NEW))
    plain = stub(tmp_path / "plain", "libfake.so.6", "void fake_old(void) {}\nvoid fake_new(void) {}\n")
    ext = linked(tmp_path / "ext.so", USE_FAKE, [new])
    resolutions = resolve(read_elf(ext), LoaderContext(ld_library_path=str(plain.parent)))
    unmet = unmet_versions(read_elf(ext), resolutions)
    assert {(u.library, u.version, u.path) for u in unmet} == {
        ("libfake.so.6", "FAKE_1.0", str(plain)), ("libfake.so.6", "FAKE_2.32", str(plain))}
    # dl-version.c only warns, but binding a versioned reference there trips an assertion in
    # dl-lookup.c's check_match, and the process dies.
    loaded = dlopen_in_child(ext, ld_library_path=str(plain.parent))
    assert not loaded.ok and "check_match: Assertion" in loaded.error


def test_a_glibc_newer_than_this_machines_is_unmet(tmp_path: Path) -> None:
    # An extension built against a future glibc, loaded with this machine's real libc.so.6.
    future = stub(tmp_path / "build-sysroot", "libc.so.6", "void future_call(void) {}\n",
                  version_script(tmp_path, "GLIBC_2.99 { global: future_call; local: *; };\n"))
    ext = linked(tmp_path / "ext.so", "extern void future_call(void);\nvoid run(void) { future_call(); }\n",
                 [future], "-nostdlib")
    analysis = analyze(ext, LoaderContext(ld_library_path=""))
    (unmet,) = analysis.unmet_versions
    assert (unmet.library, unmet.version) == ("libc.so.6", "GLIBC_2.99")
    assert read_elf(unmet.path, symbols=False).soname == "libc.so.6"
    loaded = dlopen_in_child(ext)
    assert not loaded.ok and "version `GLIBC_2.99' not found" in loaded.error
    assert os.path.basename(unmet.path) == "libc.so.6"
    assert real(unmet.path) in {real(p) for p in loaded.mapped_named("libc.so.6")}


def test_a_system_library_resolves_as_the_loader_resolves_it(tmp_path: Path) -> None:
    ext = linked(tmp_path / "ext.so", "#include <math.h>\ndouble f(double x) { return cos(x); }\n", [], "-lm")
    analysis = analyze(ext, LoaderContext(ld_library_path=""))
    libm = next(r for r in analysis.resolutions if r.needed == "libm.so.6")
    assert libm.how in (How.LD_CACHE, How.DEFAULT) and analysis.loadable
    assert {real(libm.path)} == {real(p) for p in dlopen_in_child(ext).mapped_named("libm.so.6")}


TORCH = importlib.util.find_spec("torch")
requires_torch = pytest.mark.skipif(TORCH is None or TORCH.origin is None, reason="needs torch")


@pytest.fixture(scope="module")
def torch_lib() -> Path:
    assert TORCH is not None and TORCH.origin is not None
    return Path(TORCH.origin).parent / "lib"


@requires_torch
def test_real_torch_extension_loads_after_torch(torch_lib: Path) -> None:
    context = LoaderContext(ld_library_path="", preloaded=preload_map(glob.glob(str(torch_lib / "*.so*"))))
    for extension in [*glob.glob(str(torch_lib.parent / "_C*.so")), str(torch_lib / "libtorch_python.so")]:
        analysis = analyze(extension, context)
        assert analysis.loadable, (extension, analysis.missing_libraries, analysis.missing_symbols[:5])
        assert not analysis.has_fatbin  # a CPU build
    python = analyze(torch_lib / "libtorch_python.so", context)
    assert {r.needed: r.how for r in python.resolutions}["libc10.so"] is How.LOADED


@requires_torch
def test_real_torch_library_finds_its_siblings_through_runpath(torch_lib: Path) -> None:
    analysis = analyze(torch_lib / "libtorch_python.so", LoaderContext(ld_library_path=""))
    how = {r.needed: (r.how, r.path) for r in analysis.resolutions}
    # DT_RUNPATH $ORIGIN in the CPU wheel, DT_RPATH $ORIGIN in the CUDA one.
    assert how["libc10.so"] in {(found, str(torch_lib / "libc10.so"))
                                for found in (How.RUNPATH, How.RPATH)}
    assert analysis.loadable
    assert analysis.missing_libraries == () and analysis.unmet_versions == ()


def test_library_facts_are_memoized_per_file_state(tmp_path: Path) -> None:
    path = stub(tmp_path, "libmemo.so.1", DEP % 7)
    assert library_info(path) is library_info(path)
    stub(tmp_path, "libmemo.so.2", DEP % 8, file_name="libmemo.so.1")  # rebuilt in place
    assert library_info(path).soname == "libmemo.so.2"
