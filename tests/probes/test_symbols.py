"""Hash-table symbol lookup against gcc-built libraries and real ones, with pyelftools' full
enumeration as the oracle; demangling through libstdc++."""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Dict

import pytest
from tests.helpers.broken import C10_ERROR_CXX11_ABI, C10_ERROR_OLD_ABI, requires_gcc
from tests.helpers.elf_fixtures import (
    FILLER,
    TORCH_ABSENT,
    TORCH_DEFINED,
    compiled,
    fake_libtorch_source,
    link_object,
    pyelftools_definitions,
)

from fadoctor.probes.elf import ElfError, read_elf
from fadoctor.probes.symbols import SymbolIndex, demangle, gnu_hash, sysv_hash

HASH_STYLES = {style: f"-Wl,--hash-style={style}" for style in ("gnu", "sysv", "both")}


@pytest.fixture(scope="module")
def fake_libtorch(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    root = tmp_path_factory.mktemp("libtorch")
    obj = compiled(root / "libtorch.o", fake_libtorch_source())
    return {style: link_object(root / style / "libtorch_cpu.so", obj, "libtorch_cpu.so", flag)
            for style, flag in HASH_STYLES.items()}


@requires_gcc
def test_hash_styles_are_what_they_claim(fake_libtorch: Dict[str, Path]) -> None:
    sections = {style: set(read_elf(path, symbols=False).sections) for style, path in fake_libtorch.items()}
    assert ".gnu.hash" in sections["gnu"] and ".hash" not in sections["gnu"]
    assert ".hash" in sections["sysv"] and ".gnu.hash" not in sections["sysv"]
    assert {".hash", ".gnu.hash"} <= sections["both"]


@requires_gcc
@pytest.mark.parametrize("style", sorted(HASH_STYLES))
def test_torch_symbols_hit_and_miss(fake_libtorch: Dict[str, Path], style: str) -> None:
    with SymbolIndex(fake_libtorch[style]) as index:
        assert all(index.defines(name) for name in TORCH_DEFINED)
        assert not any(index.defines(name) for name in TORCH_ABSENT)
        assert index.defines("filler_0") and index.defines(f"filler_{FILLER - 1}")
        assert index.defines("weak_definition")  # a weak definition binds
        assert index.defines("first_tls")  # TLS at offset 0: value 0 and still a definition
        assert index.defines("exported_object")
        assert not index.defines("hidden_definition")  # not in .dynsym at all
        assert not index.defines("puts")  # in .dynsym, but undefined here
        assert not index.defines(f"filler_{FILLER}") and not index.defines("")


def _agrees_with_enumeration(path: Path, sample: int = 4000) -> None:
    oracle = pyelftools_definitions(path)
    names = sorted(oracle)
    random.Random(0).shuffle(names)
    names = names[:sample] + [name + "_absent" for name in names[:200]]
    with SymbolIndex(path) as index:
        wrong = [name for name in names if index.defines(name) != oracle.get(name, False)]
    assert wrong == []


@requires_gcc
@pytest.mark.parametrize("style", sorted(HASH_STYLES))
def test_every_symbol_agrees_with_pyelftools(fake_libtorch: Dict[str, Path], style: str) -> None:
    _agrees_with_enumeration(fake_libtorch[style])


def _mapped(name: str) -> str:
    with open("/proc/self/maps") as maps:
        return next(line.split()[-1] for line in maps if os.path.basename(line.split()[-1]) == name)


@pytest.mark.parametrize("name", ["libc.so.6", "libm.so.6"])
def test_real_system_libraries_agree_with_pyelftools(name: str) -> None:
    import math  # noqa: F401 -- libm is mapped into this interpreter

    _agrees_with_enumeration(Path(_mapped(name)))


TORCH = importlib.util.find_spec("torch")


@pytest.mark.skipif(TORCH is None or TORCH.origin is None, reason="needs torch")
def test_real_libc10_agrees_with_pyelftools() -> None:
    assert TORCH is not None and TORCH.origin is not None
    _agrees_with_enumeration(Path(TORCH.origin).parent / "lib" / "libc10.so")


@requires_gcc
def test_without_a_hash_section_symbols_are_scanned(fake_libtorch: Dict[str, Path], tmp_path: Path) -> None:
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        pytest.skip("needs objcopy")
    bare = tmp_path / "libbare.so"
    subprocess.run([objcopy, "--remove-section=.gnu.hash", str(fake_libtorch["gnu"]), str(bare)], check=True)
    assert ".gnu.hash" not in read_elf(bare, symbols=False).sections
    with SymbolIndex(bare) as index:
        assert index.defines(TORCH_DEFINED[0]) and not index.defines(TORCH_ABSENT[0])
        assert not index.defines("puts")


def test_hash_functions_known_values() -> None:
    # Values from the ELF gABI's DT_HASH and glibc's dl_new_hash, as listed in the write-ups of
    # both tables (flapenguin.me, 2017); the agreement tests above prove them on real tables.
    assert gnu_hash(b"") == 5381
    assert gnu_hash(b"printf") == 0x156B2BB8
    assert gnu_hash(b"exit") == 0x7C967E3F
    assert sysv_hash(b"printf") == 0x077905A6
    assert sysv_hash(b"exit") == 0x0006CF04
    long_name = C10_ERROR_CXX11_ABI.encode() * 8  # wraps around 32 bits many times
    h = 5381
    for byte in long_name:
        h = (h * 33 + byte) % 2**32
    assert gnu_hash(long_name) == h


def test_not_elf_is_an_elf_error(tmp_path: Path) -> None:
    path = tmp_path / "libtext.so"
    path.write_text("INPUT(-lc)\n")  # a linker script, as /usr/lib/.../libc.so is
    with pytest.raises(ElfError):
        SymbolIndex(path)


def test_demangle_through_libstdcxx() -> None:
    names = [C10_ERROR_OLD_ABI, C10_ERROR_CXX11_ABI, "memcpy", "_Znot_a_name", TORCH_DEFINED[1]]
    spelled = demangle(names)
    # libstdc++ abbreviates the pre-C++11 std::string as std::string (c++filt spells it out).
    assert spelled[C10_ERROR_OLD_ABI] == "c10::Error::Error(c10::SourceLocation, std::string)"
    assert spelled[C10_ERROR_CXX11_ABI] == (
        "c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, "
        "std::char_traits<char>, std::allocator<char> >)")
    assert spelled["memcpy"] == "memcpy"
    assert spelled["_Znot_a_name"] == "_Znot_a_name"  # invalid: returned as given
    assert spelled[TORCH_DEFINED[1]].startswith("at::_ops::empty_like::call(at::Tensor const&")


def test_demangle_many_names_is_stable() -> None:
    names = [C10_ERROR_OLD_ABI] * 2000 + [f"_ZN3foo{len(f'fn{i}')}fn{i}Ev" for i in range(50)]
    spelled = demangle(names)  # every buffer libstdc++ returns is freed; none is reused
    assert [spelled[f"_ZN3foo{len(f'fn{i}')}fn{i}Ev"] for i in (7, 42)] == ["foo::fn7()", "foo::fn42()"]
    assert len(spelled) == 51
