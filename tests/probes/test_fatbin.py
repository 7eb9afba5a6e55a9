"""The fat binary parser, on real libraries built with nvcc and read back by cuobjdump.

The builds (tests/helpers/cuda_fixtures.py) cover SASS only, PTX, arch- and family-specific
targets (sm_90a, sm_100f), nvcc 13's default compression (zstd PTX, raw SASS), -compress-all,
--no-compress, --compress-mode=speed (LZ4) and two translation units in one library.
"""

from __future__ import annotations

import contextlib
import random
import struct
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import pytest
from tests.helpers.cuda_fixtures import (
    BUILDS,
    NVCC,
    Build,
    build_all,
    cuobjdump_entries,
    cuobjdump_lists,
    fatbin_section,
    find_cuobjdump,
    nvcc_version,
)

from fadoctor.probes.fatbin import (
    MAGIC,
    Codec,
    Fatbin,
    FatbinError,
    Kind,
    arch_runs_on,
    images_for,
    parse_fatbin,
    runs_on,
)

BY_NAME = {b.name: b for b in BUILDS}
ZSTD_FRAME = b"\x28\xb5\x2f\xfd"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Union[Path, str]]:
    if NVCC is None:
        pytest.skip("needs nvcc to build CUDA binaries")
    return build_all(tmp_path_factory.mktemp("nvcc"))


def _library(built: Dict[str, Union[Path, str]], name: str) -> Tuple[Build, Path]:
    result = built[name]
    if isinstance(result, str):
        pytest.skip(result)
    return BY_NAME[name], result


@pytest.fixture(params=[b.name for b in BUILDS])
def library(request: pytest.FixtureRequest, built: Dict[str, Union[Path, str]]) -> Tuple[Build, Path]:
    return _library(built, request.param)


@pytest.fixture(scope="module")
def cuobjdump() -> str:
    found = find_cuobjdump()
    if found is None:
        pytest.skip("needs cuobjdump (CUDA toolkit or the nvidia-cuda-cuobjdump wheel) as the oracle")
    return found


def _parse(library: Path) -> Fatbin:
    return parse_fatbin(fatbin_section(library))


# --- what the parser reads from real libraries -----------------------------------------------


def test_arch_sets_are_the_ones_nvcc_was_asked_for(library: Tuple[Build, Path]) -> None:
    build, path = library
    fatbin = _parse(path)
    assert fatbin.sass_archs == build.sass
    assert fatbin.ptx_archs == build.ptx
    assert set(fatbin.arch_list) == build.sass | build.ptx


def test_every_entry_matches_cuobjdump(library: Tuple[Build, Path], cuobjdump: str) -> None:
    _, path = library
    ours = [(e.kind, e.arch, e.version, e.compressed) for e in _parse(path).entries]
    assert ours == cuobjdump_entries(cuobjdump, path)


def test_arch_sets_match_cuobjdump_lists(library: Tuple[Build, Path], cuobjdump: str) -> None:
    _, path = library
    entries = _parse(path).entries
    elf, ptx = cuobjdump_lists(cuobjdump, path)
    # --list-elf names a family cubin by its base arch (x.sm_100.cubin; the dump says sm_100f).
    assert sorted(e.arch.rstrip("f") for e in entries if e.kind is Kind.SASS) == sorted(elf)
    assert sorted(e.arch for e in entries if e.kind is Kind.PTX) == sorted(ptx)


def test_compression_follows_the_build_options(library: Tuple[Build, Path]) -> None:
    build, path = library
    if nvcc_version() < (13, 0):
        pytest.skip("the expected codecs are nvcc 13's defaults")
    sass_codec, ptx_codec = build.codecs
    for entry in _parse(path).entries:
        assert entry.codec is (sass_codec if entry.kind is Kind.SASS else ptx_codec), entry
        assert entry.compressed == (entry.codec is not Codec.NONE)


def test_payloads_start_where_the_headers_say(library: Tuple[Build, Path]) -> None:
    _, path = library
    data = fatbin_section(path)
    for entry in _parse(path).entries:
        payload = data[entry.payload_offset:entry.payload_offset + entry.payload_size]
        if entry.codec is Codec.ZSTD:
            assert payload.startswith(ZSTD_FRAME), entry
        elif entry.kind is Kind.SASS and not entry.compressed:
            assert payload.startswith(b"\x7fELF\x02"), entry  # a 64-bit ELF cubin
        elif entry.kind is Kind.PTX and not entry.compressed:
            sm = entry.arch.split("_")[1]
            assert f".target sm_{sm}".encode() in payload, entry
        assert (entry.uncompressed_size is not None) == entry.compressed, entry
        assert entry.payload_size % 8 == 0


def test_two_translation_units_make_two_containers(built: Dict[str, Union[Path, str]]) -> None:
    _, path = _library(built, "ptx_two_units")
    fatbin = _parse(path)
    per_container = [{e.arch for e in fatbin.entries if e.container == i}
                     for i in range(fatbin.containers)]
    # One container per .cu file; nvcc -shared may add one for its device link (SASS only).
    assert per_container.count({"sm_80", "compute_90"}) == 2
    assert all(archs <= {"sm_80", "compute_90"} for archs in per_container)
    assert [e.container for e in fatbin.entries] == sorted(e.container for e in fatbin.entries)


def test_concatenated_sections_parse_as_one(built: Dict[str, Union[Path, str]]) -> None:
    first, second = (fatbin_section(_library(built, n)[1]) for n in ("sass", "family"))
    a, b = parse_fatbin(first), parse_fatbin(second)
    # Zeros between containers are what a linker's alignment padding looks like.
    joined = parse_fatbin(first + bytes(8) + second)
    assert joined.containers == a.containers + b.containers
    assert [(e.arch, e.container) for e in joined.entries] == (
        [(e.arch, e.container) for e in a.entries]
        + [(e.arch, e.container + a.containers) for e in b.entries])
    assert joined.sass_archs == a.sass_archs | b.sass_archs


# --- truncated and garbage input -------------------------------------------------------------


def test_every_prefix_parses_to_whole_containers_or_raises(built: Dict[str, Union[Path, str]]) -> None:
    data = fatbin_section(_library(built, "ptx_two_units")[1])
    whole = parse_fatbin(data)
    boundaries = {0, len(data)} | {_container_end(whole, i) for i in range(whole.containers)}
    for cut in range(len(data)):
        try:
            prefix = parse_fatbin(data[:cut])
        except FatbinError:
            assert cut not in boundaries
            continue
        assert cut in boundaries, cut
        assert prefix.entries == whole.entries[:len(prefix.entries)]


def _container_end(fatbin: Fatbin, index: int) -> int:
    last = [e for e in fatbin.entries if e.container == index][-1]
    return last.payload_offset + last.payload_size


def test_corrupted_headers_raise_fatbin_error_or_parse(built: Dict[str, Union[Path, str]]) -> None:
    data = fatbin_section(_library(built, "family")[1])
    # Whatever a byte of the first headers becomes, the parser answers or says why: no struct.error.
    for offset in range(256):
        for value in (0x00, 0x7F, 0xFF):
            corrupt = bytearray(data)
            corrupt[offset] = value
            with contextlib.suppress(FatbinError):
                parse_fatbin(bytes(corrupt))


def _container(*entries: bytes, version: int = 1, header_size: int = 16,
               size: Optional[int] = None) -> bytes:
    body = b"".join(entries)
    header = struct.pack("<IHHQ", MAGIC, version, header_size, len(body) if size is None else size)
    return header + b"\0" * (header_size - 16) + body


def _entry(kind: int = 2, sm: int = 90, flags: int = 0x11, payload: bytes = b"\x7fELF" + bytes(4),
           header_size: int = 64, payload_size: Optional[int] = None) -> bytes:
    size = len(payload) if payload_size is None else payload_size
    header = struct.pack("<HHIQIIHHI8xQ8xQ", kind, 0x101, header_size, size, 0, 0, 8, 1, sm, flags, 0)
    # A header size past the container is never written out in full, only claimed.
    return header + b"\0" * min(max(header_size - 64, 0), 64) + payload


def test_a_handmade_container_parses() -> None:
    fatbin = parse_fatbin(_container(_entry(), _entry(kind=1, sm=100, flags=0x200011), _entry(kind=4)))
    assert [(e.kind, e.arch) for e in fatbin.entries] == [
        (Kind.SASS, "sm_90"), (Kind.PTX, "compute_100f"), (Kind.OTHER, "unknown_90")]
    assert fatbin.arch_list == ("sm_90", "compute_100f")


def test_an_empty_section_holds_nothing() -> None:
    assert parse_fatbin(b"") == Fatbin(containers=0, entries=())


@pytest.mark.parametrize("data, message", [
    (b"\0" * 64, "no fatbin container at 0x0"),
    (b"\x7fELF\x02\x01\x01" + bytes(57), "magic 0x464c457f"),
    (struct.pack("<I", MAGIC), "cut short"),
    (_container(version=2), "version 2"),
    (_container(header_size=8), "8-byte header"),
    (_container(size=4096), "needs 4112 bytes"),
    (_container(_entry()) + b"garbage!" * 2, "no fatbin container at 0x58"),
    (_container(_entry()[:40]), "cut short"),
    (_container(_entry(header_size=32)), "32-byte header"),
    (_container(_entry(payload_size=1 << 40)), "past the end of its container"),
    (_container(_entry(header_size=0xFFFFFFFF)), "past the end of its container"),
])
def test_malformed_input_raises_fatbin_error(data: bytes, message: str) -> None:
    with pytest.raises(FatbinError, match=message):
        parse_fatbin(data)


def test_random_bytes_raise_fatbin_error() -> None:
    rng = random.Random(0)
    for _ in range(200):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        with pytest.raises(FatbinError):
            parse_fatbin(struct.pack("<I", MAGIC) + body if rng.random() < 0.5 else body)


# --- which GPUs the images run on ------------------------------------------------------------


@pytest.mark.parametrize("arch, cc, expected", [
    ("sm_80", (8, 0), True), ("sm_80", (8, 6), True), ("sm_86", (8, 0), False),
    ("sm_80", (9, 0), False),  # SASS never crosses a major
    ("compute_80", (9, 0), True), ("compute_90", (12, 1), True), ("compute_90", (8, 9), False),
    ("sm_90a", (9, 0), True), ("compute_90a", (9, 0), True),
    ("compute_90a", (10, 0), False),  # arch-specific PTX is not forward compatible
    ("sm_100a", (10, 3), False), ("sm_120a", (12, 1), False),
    ("sm_100f", (10, 3), True), ("compute_100f", (10, 3), True),
    ("sm_100f", (11, 0), False), ("compute_100f", (12, 0), False),  # a family is one major
    ("sm_103f", (10, 0), False), ("sm_120f", (12, 1), True),
    ("lto_90", (9, 0), False), ("sm_9", (9, 0), False), ("garbage", (9, 0), False),
])
def test_arch_runs_on(arch: str, cc: Tuple[int, int], expected: bool) -> None:
    assert arch_runs_on(arch, cc) is expected


@pytest.mark.parametrize("name, cc, expected", [
    ("sass", (8, 6), ["sm_80"]),
    ("sass", (9, 0), ["sm_90"]),
    ("sass", (10, 0), []),
    ("ptx_two_units", (8, 0), ["sm_80"]),  # compute_90 needs a 9.0 or newer GPU
    ("ptx_two_units", (12, 0), ["compute_90"]),
    ("arch_specific_uncompressed", (9, 0), ["sm_90a", "compute_90a"]),
    ("arch_specific_uncompressed", (10, 0), []),
    ("family", (10, 3), ["sm_100f", "compute_100f"]),
    ("family", (12, 0), ["sm_120a"]),
    ("family", (12, 1), []),
    ("family", (11, 0), []),
])
def test_images_for_a_gpu(built: Dict[str, Union[Path, str]], name: str, cc: Tuple[int, int],
                          expected: List[str]) -> None:
    fatbin = _parse(_library(built, name)[1])
    images = images_for(fatbin.entries, cc)
    assert list(dict.fromkeys(e.arch for e in images)) == expected  # SASS first
    assert runs_on(fatbin.arch_list, cc) is bool(expected)
