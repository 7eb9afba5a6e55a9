"""The CUDA fat binaries in a host ELF's `.nv_fatbin` section: which SASS and PTX images they hold."""

# NVIDIA does not document this container; the layout below is what these open readers agree on,
# checked against nvcc 13.0 builds and cuobjdump (tests/probes/test_fatbin.py):
# - NVIDIA's fatbinary_section.h (in every CUDA toolkit) names the `.nv_fatbin` section; its
#   older fatbinary.h defined the container header {magic 0xBA55ED50, version 1, headerSize,
#   fatSize = size of everything after the header}.
# - n-eiling/cuda-fatbin-decompression, fatbin-decompress.h and .c (also used by RWTH-ACS/cricket):
#   the entry header {kind, ?, header size, payload size, compressed size, ?, minor, major, arch,
#   name offset/length, flags, 0, decompressed size} and flag 0x2000 = LZ4-compressed.
# - jiegec/fatbinary, src/lib.rs: the same entry header, with offset 0x14 = options offset and
#   the flag bits for 64-bit, debug, producer and host.
# - vosen/ZLUDA, zluda_dump/src/dark_api.rs: kind 1 = PTX, 2 = ELF, and the walk
#   next entry = entry + header size + payload size, entries starting at container + headerSize.
# - redplait/denvdis, fb/fb.cc: one section holds several containers back to back, one per
#   translation unit.
# - GrigoryEvko/nvopen-tools, fatbin/FORMAT_SPECIFICATION.md: headers longer than 64 bytes for
#   newer targets, flag 0x8000 = zstd-compressed (CUDA 13's default codec).
# Measured here and pinned by the tests: flag 0x100000 marks an arch-specific target (sm_90a),
# 0x200000 a family-specific one (sm_100f); kind 8 is LTO-IR ("nvvm code" in cuobjdump, seen in
# -rdc objects); `nvcc -shared` adds a container of its own for the device link.

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from enum import Enum
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple, Union

from fadoctor.archs import ARCH as _ARCH
from fadoctor.archs import arch_runs_on

Buffer = Union[bytes, bytearray, memoryview]

MAGIC = 0xBA55ED50
# magic, version, header size, size of everything after the header.
_CONTAINER = struct.Struct("<IHHQ")
# kind, entry format version, header size, payload size (padded), compressed size, options offset,
# version minor, version major, SM number, [object name offset and length], flags, [zero],
# uncompressed size. Newer targets append fields after these 64 bytes; header size covers them.
_ENTRY = struct.Struct("<HHIQIIHHI8xQ8xQ")
_ZERO_RUN = re.compile(rb"\x00*")

_FLAG_LZ4 = 0x2000
_FLAG_ZSTD = 0x8000
_FLAG_ARCH_SPECIFIC = 0x100000
_FLAG_FAMILY_SPECIFIC = 0x200000


class FatbinError(ValueError):
    """The bytes are not a well-formed fat binary section (garbage, or cut short)."""


class Kind(str, Enum):
    """What an entry holds."""

    SASS = "sass"  # an ELF cubin: machine code for one SM architecture
    PTX = "ptx"  # virtual ISA the driver JIT-compiles
    LTOIR = "ltoir"  # NVVM IR for link-time optimisation (relocatable objects only)
    OTHER = "other"


class Codec(str, Enum):
    """How an entry's payload is stored."""

    NONE = "none"
    LZ4 = "lz4"
    ZSTD = "zstd"
    UNKNOWN = "unknown"  # says it is compressed, but not with a codec named here


_KINDS: Dict[int, Kind] = {1: Kind.PTX, 2: Kind.SASS, 8: Kind.LTOIR}
# The arch vocabulary of torch.cuda.get_arch_list() and of nvcc's -gencode code=...
_PREFIX = {Kind.SASS: "sm", Kind.PTX: "compute", Kind.LTOIR: "lto", Kind.OTHER: "unknown"}


@dataclass(frozen=True)
class FatbinEntry:
    """One embedded image and what its header says about it (the payload is not decoded)."""

    container: int  # index of the container (one per translation unit) that holds it
    offset: int  # of the entry header, from the start of the section
    kind: Kind
    kind_code: int
    arch: str  # sm_90, sm_90a, sm_100f; PTX as compute_90
    version: Tuple[int, int]  # cubin ABI version for SASS ([1,8]), PTX ISA version for PTX ([9,0])
    compressed: bool
    codec: Codec
    flags: int
    payload_offset: int
    payload_size: int  # bytes stored, padding included
    uncompressed_size: Optional[int]


@dataclass(frozen=True)
class Fatbin:
    """Everything in one `.nv_fatbin` section, entries in section order."""

    containers: int
    entries: Tuple[FatbinEntry, ...]

    @property
    def sass_archs(self) -> FrozenSet[str]:
        return frozenset(e.arch for e in self.entries if e.kind is Kind.SASS)

    @property
    def ptx_archs(self) -> FrozenSet[str]:
        return frozenset(e.arch for e in self.entries if e.kind is Kind.PTX)

    @property
    def arch_list(self) -> Tuple[str, ...]:
        """SASS and PTX archs in the order torch lists its own: by SM number, SASS first."""
        return tuple(sorted(self.sass_archs | self.ptx_archs, key=_arch_order))


def parse_fatbin(data: Buffer) -> Fatbin:
    """Every container and entry in the contents of a `.nv_fatbin` section."""
    view = memoryview(data)
    entries: List[FatbinEntry] = []
    offset = index = 0
    while offset < len(view):
        start, end = _container(view, offset)
        entries.extend(_entries(view, start, end, index))
        index += 1
        # A linker may align each object's section; whatever pads containers apart is zeros.
        match = _ZERO_RUN.match(view, end)
        offset = match.end() if match else end
    return Fatbin(containers=index, entries=tuple(entries))


def _container(view: memoryview, offset: int) -> Tuple[int, int]:
    """Where the entries of the container at `offset` start and where the container ends."""
    if len(view) - offset < _CONTAINER.size:
        raise FatbinError(f"fatbin cut short: {len(view) - offset} bytes at {offset:#x} are too "
                          f"few for a {_CONTAINER.size}-byte container header")
    magic, version, header_size, size = _CONTAINER.unpack_from(view, offset)
    if magic != MAGIC:
        raise FatbinError(f"no fatbin container at {offset:#x}: magic {magic:#010x}, "
                          f"expected {MAGIC:#010x}")
    if version != 1:  # NVIDIA's header: "it should be the goal to never bump this version"
        raise FatbinError(f"fatbin container at {offset:#x} has version {version}; only 1 is known")
    if header_size < _CONTAINER.size:
        raise FatbinError(f"fatbin container at {offset:#x} has a {header_size}-byte header, "
                          f"shorter than the {_CONTAINER.size} bytes it must hold")
    end = offset + header_size + size
    if end > len(view):
        raise FatbinError(f"fatbin cut short: the container at {offset:#x} needs "
                          f"{header_size + size} bytes, {len(view) - offset} remain")
    return offset + header_size, end


def _entries(view: memoryview, start: int, end: int, index: int) -> List[FatbinEntry]:
    entries: List[FatbinEntry] = []
    offset = start
    while offset < end:
        entry = _entry(view, offset, end, index)
        entries.append(entry)
        offset = entry.payload_offset + entry.payload_size
    return entries


def _entry(view: memoryview, offset: int, end: int, index: int) -> FatbinEntry:
    if end - offset < _ENTRY.size:
        raise FatbinError(f"fatbin entry at {offset:#x} cut short: {end - offset} bytes left in "
                          f"its container, the header alone takes {_ENTRY.size}")
    (kind_code, _, header_size, payload_size, _, _, minor, major, sm, flags,
     uncompressed) = _ENTRY.unpack_from(view, offset)
    if header_size < _ENTRY.size or offset + header_size + payload_size > end:
        raise FatbinError(f"fatbin entry at {offset:#x} claims a {header_size}-byte header and a "
                          f"{payload_size}-byte payload, past the end of its container at {end:#x}")
    kind = _KINDS.get(kind_code, Kind.OTHER)
    codec = _codec(flags, uncompressed)
    return FatbinEntry(
        container=index, offset=offset, kind=kind, kind_code=kind_code,
        arch=f"{_PREFIX[kind]}_{sm}{_suffix(flags)}", version=(major, minor),
        compressed=codec is not Codec.NONE, codec=codec, flags=flags,
        payload_offset=offset + header_size, payload_size=payload_size,
        uncompressed_size=uncompressed or None)


def _codec(flags: int, uncompressed: int) -> Codec:
    if flags & _FLAG_ZSTD:
        return Codec.ZSTD
    if flags & _FLAG_LZ4:
        return Codec.LZ4
    # Uncompressed entries leave the uncompressed-size field zero; a size there with neither
    # flag is compression this module does not know, still worth reporting as compressed.
    return Codec.UNKNOWN if uncompressed else Codec.NONE


def _suffix(flags: int) -> str:
    # Both bits at once have not been seen; "a" is the narrower promise, so it wins: a prediction
    # built on it can only miss a GPU the image would run on, never claim one it would not.
    if flags & _FLAG_ARCH_SPECIFIC:
        return "a"
    return "f" if flags & _FLAG_FAMILY_SPECIFIC else ""


def _arch_order(arch: str) -> Tuple[int, int, str]:
    match = _ARCH.fullmatch(arch)
    if match is None:
        return (0, 0, arch)
    kind, digits, suffix = match.groups()
    return (int(digits), kind == "compute", suffix)


def runs_on(archs: Iterable[str], cc: Tuple[int, int]) -> bool:
    """Whether any arch of a list (a fatbin's `arch_list`, torch's arch list) runs on `cc`."""
    return any(arch_runs_on(arch, cc) for arch in archs)


def images_for(entries: Iterable[FatbinEntry], cc: Tuple[int, int]) -> Tuple[FatbinEntry, ...]:
    """The SASS and PTX entries that can run on `cc`, SASS first: the driver prefers it to a JIT."""
    usable = [e for e in entries if e.kind in (Kind.SASS, Kind.PTX) and arch_runs_on(e.arch, cc)]
    return tuple(sorted(usable, key=lambda e: e.kind is Kind.PTX))
