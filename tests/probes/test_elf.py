"""fadoctor.probes.elf against real shared objects built with gcc, this machine's libc, and torch."""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.helpers.broken import C10_ERROR_OLD_ABI, requires_gcc
from tests.helpers.elf_fixtures import linked, pyelftools_undefined, stub, version_script

from fadoctor.probes.elf import ElfError, Symbol, VersionNeed, identify, read_elf, read_section

pytestmark = requires_gcc

FAKE_VERSIONS = "FAKE_1.0 { global: fake_old; local: *; };\nFAKE_2.32 { global: fake_new; } FAKE_1.0;\n"


@dataclass(frozen=True)
class Built:
    first: Path
    second: Path
    versioned: Path
    ext: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("elf")
    first = stub(root / "deps", "libfirst.so.1", "int first(void) { return 1; }\n")
    second = stub(root / "deps", "libsecond.so.2", "int second(void) { return 2; }\n")
    versioned = stub(root / "deps", "libfake.so.6", "void fake_old(void) {}\nvoid fake_new(void) {}\n",
                     version_script(root, FAKE_VERSIONS))
    source = (
        "#include <string.h>\n"
        f'extern void c10_error(void) __asm__("{C10_ERROR_OLD_ABI}");\n'
        "extern int first(void); extern int second(void);\n"
        "extern void fake_old(void); extern void fake_new(void);\n"
        "__attribute__((weak)) void optional_hook(void);\n"
        "static int local_helper(void) { return 3; }\n"
        "void *(*volatile copy)(void *, const void *, size_t) = memcpy;\n"
        "int run(void) { c10_error(); fake_old(); fake_new();\n"
        "  if (optional_hook) optional_hook(); return first() + second() + local_helper(); }\n"
    )
    ext = linked(root / "ext" / "ext.so", source, [first, second, versioned],
                 "-Wl,-soname,ext.so", "-Wl,-rpath,$ORIGIN/../deps:/opt/x", "-Wl,--disable-new-dtags")
    return Built(first, second, versioned, ext)


def test_dynamic_section(built: Built) -> None:
    info = read_elf(built.ext)
    assert info.soname == "ext.so"
    assert info.needed[:3] == ("libfirst.so.1", "libsecond.so.2", "libfake.so.6")  # link order
    assert "libc.so.6" in info.needed
    assert info.rpath == ("$ORIGIN/../deps", "/opt/x")  # raw: tokens are the loader's business
    assert info.runpath == ()
    assert not info.nodeflib
    assert {".dynsym", ".dynstr", ".gnu.hash", ".gnu.version_r"} <= set(info.sections)


def test_runpath_with_new_dtags(built: Built, tmp_path: Path) -> None:
    ext = linked(tmp_path / "ext.so", "int f(void) { return 0; }\n", [built.first],
                 "-Wl,-rpath,${ORIGIN}/lib", "-Wl,--enable-new-dtags", "-Wl,-z,nodefaultlib")
    info = read_elf(ext)
    assert (info.rpath, info.runpath) == ((), ("${ORIGIN}/lib",))
    assert info.nodeflib and info.soname is None


def test_undefined_symbols_are_the_strong_ones_with_their_versions(built: Built) -> None:
    info = read_elf(built.ext)
    by_name = {symbol.name: symbol for symbol in info.undefined}
    assert by_name[C10_ERROR_OLD_ABI] == Symbol(C10_ERROR_OLD_ABI, None)
    assert by_name["fake_new"] == Symbol("fake_new", "FAKE_2.32", "libfake.so.6")
    assert by_name["fake_old"] == Symbol("fake_old", "FAKE_1.0", "libfake.so.6")
    assert str(by_name["fake_new"]) == "fake_new@FAKE_2.32"
    assert {"first", "second"} <= set(by_name)
    libc = next(need for need in info.version_needs if need.library == "libc.so.6")
    assert by_name["memcpy"].version in libc.versions  # memcpy@GLIBC_2.14 on x86-64
    assert "optional_hook" not in by_name  # weak: the loader leaves it null
    assert not {"run", "local_helper", "copy"} & set(by_name)  # defined or local


def test_undefined_symbols_match_a_full_pyelftools_enumeration(built: Built) -> None:
    assert [s.name for s in read_elf(built.ext).undefined] == pyelftools_undefined(built.ext)


def test_version_needs_grouped_by_library(built: Built) -> None:
    needs = {need.library: need for need in read_elf(built.ext).version_needs}
    assert set(needs["libfake.so.6"].versions) == {"FAKE_1.0", "FAKE_2.32"}
    assert all(v.startswith("GLIBC_") for v in needs["libc.so.6"].versions)
    assert isinstance(needs["libc.so.6"], VersionNeed)


def test_version_definitions(built: Built) -> None:
    assert read_elf(built.versioned).version_definitions == ("FAKE_1.0", "FAKE_2.32")  # base left out
    assert read_elf(built.first).version_definitions is None  # unversioned: no .gnu.version_d


def test_real_libc_defines_its_own_release() -> None:
    release = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    if not release or not release.startswith("glibc "):
        pytest.skip("not glibc")
    libc = _mapped_libc()
    definitions = read_elf(libc, symbols=False).version_definitions or ()
    assert f"GLIBC_{release.split()[1]}" in definitions
    assert read_elf(libc, symbols=False).soname == "libc.so.6"


def _mapped_libc() -> str:
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if line.rstrip().endswith(".so.6")}
    return next(p for p in paths if os.path.basename(p) == "libc.so.6")


def test_identity_of_this_interpreter() -> None:
    identity = identify(os.path.realpath(sys.executable))
    assert identity is not None
    assert identity.elf_class == (64 if sys.maxsize > 2**32 else 32)
    assert identity.little_endian == (sys.byteorder == "little")
    assert identity == read_elf(_mapped_libc(), symbols=False).identity
    assert identity.machine.startswith("EM_")


def test_read_section(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 4
    values = ", ".join(map(str, blob))
    so = linked(tmp_path / "fat.so", "__attribute__((section(\".nv_fatbin\"), used))\n"
                f"static const unsigned char blob[{len(blob)}] = {{{values}}};\nint zeros[64];\n", [])
    assert read_section(so, ".nv_fatbin") == blob
    assert read_section(so, ".no_such_section") is None
    assert read_section(so, ".bss") == b""  # SHT_NOBITS: no bytes in the file
    assert ".nv_fatbin" in read_elf(so).sections


@pytest.mark.parametrize("content", [b"", b"#!/bin/sh\necho hi\n", b"\x7fELF\x02\x01\x01" + b"\0" * 9])
def test_not_elf_is_an_elf_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "libbroken.so"
    path.write_bytes(content)
    with pytest.raises(ElfError):
        read_elf(path)
    with pytest.raises(ElfError):
        read_section(path, ".text")
    assert identify(path) is None


def test_truncated_and_missing_files(built: Built, tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.so"
    truncated.write_bytes(built.ext.read_bytes()[:200])
    assert identify(truncated) == identify(built.ext)  # the header alone is intact
    with pytest.raises(ElfError):
        read_elf(truncated)
    with pytest.raises(ElfError, match="No such file"):
        read_elf(tmp_path / "absent.so")


def test_a_32_bit_header_reads_as_32_bit(built: Built, tmp_path: Path) -> None:
    blob = bytearray(built.first.read_bytes())
    blob[4] = 1  # EI_CLASS = ELFCLASS32: what ld.so compares before anything else
    path = tmp_path / "lib32.so"
    path.write_bytes(bytes(blob))
    identity = identify(path)
    assert identity is not None and identity.elf_class == 32


TORCH = importlib.util.find_spec("torch")
requires_torch = pytest.mark.skipif(TORCH is None or TORCH.origin is None, reason="needs torch")


@requires_torch
def test_real_torch_library() -> None:
    assert TORCH is not None and TORCH.origin is not None
    c10 = Path(TORCH.origin).parent / "lib" / "libc10.so"
    info = read_elf(c10)
    assert info.soname == "libc10.so"
    assert "libc.so.6" in info.needed
    # The CPU wheel says DT_RUNPATH $ORIGIN; the CUDA one DT_RPATH $ORIGIN plus the nvidia wheels.
    assert "$ORIGIN" in (info.runpath or info.rpath)
    assert [s.name for s in info.undefined] == pyelftools_undefined(c10)
    assert info.identity == identify(os.path.realpath(sys.executable))
