"""ELF facts of shared objects, read from the files and never loaded: the one pyelftools user.

API (plain frozen dataclasses; `fadoctor.facts.model` maps them into the facts model):

    read_elf(path, *, symbols=True) -> ElfInfo   soname, DT_NEEDED, DT_RPATH/DT_RUNPATH, the
                                                undefined strong dynamic symbols, version needs
                                                (.gnu.version_r) and definitions (.gnu.version_d)
    identify(path) -> Optional[Identity]         ELF class, byte order and machine, from the header
    read_section(path, name) -> Optional[bytes]  the raw bytes of one section (".nv_fatbin")
    MappedElf(path)                              the file mapped read-only with its section table,
                                                for `symbols.SymbolIndex`, the hash-table reader
    ElfError                                     anything that cannot be read as ELF

Everything is read with struct from a read-only mmap, so pages of a 400 MB library are touched
only where a lookup lands; pyelftools supplies the machine names (and is the tests' oracle). Its
objects cost ~70 µs a symbol (5 s to enumerate libtorch_cpu's 75k dynamic symbols), parse a whole
GNU hash table on construction, and took 5-20 ms a file for .dynamic and the version sections
alone: a whole environment's extensions and their libraries are read in well under a second.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import struct
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from elftools.common.exceptions import ELFError
from elftools.elf.enums import ENUM_E_MACHINE

PathLike = Union[str, "os.PathLike[str]"]

SHT_RELA, SHT_HASH, SHT_DYNAMIC, SHT_NOBITS, SHT_REL, SHT_DYNSYM = 4, 5, 6, 8, 9, 11
SHT_GNU_HASH, SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_GNU_VERSYM = (
    0x6FFFFFF6, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF)
SHN_UNDEF, SHN_XINDEX = 0, 0xFFFF
STB_LOCAL, STB_WEAK = 0, 2
DF_1_NODEFLIB = 0x800
VER_FLG_BASE, VER_FLG_WEAK = 0x1, 0x2
VERSYM_HIDDEN = 0x8000
_MACHINES: Dict[int, str] = {}
for _name, _value in ENUM_E_MACHINE.items():
    if isinstance(_value, int):
        _MACHINES.setdefault(_value, _name)


class ElfError(Exception):
    """A file that is missing, unreadable, not ELF, or truncated."""


@dataclass(frozen=True)
class Identity:
    """What ld.so compares before it accepts a candidate file."""

    elf_class: int  # 32 or 64
    little_endian: bool
    machine: str  # pyelftools' spelling: "EM_X86_64", "EM_AARCH64", ...


@dataclass(frozen=True)
class Symbol:
    name: str
    version: Optional[str] = None  # the version it is bound to: "GLIBC_2.14" for memcpy@GLIBC_2.14
    library: Optional[str] = None  # the file that version is needed from (.gnu.version_r): libc.so.6

    def __str__(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name


@dataclass(frozen=True)
class VersionNeed:
    library: str  # the file name as in DT_NEEDED: "libc.so.6"
    versions: Tuple[str, ...]  # non-weak needs only: a missing weak version is a warning to ld.so


@dataclass(frozen=True)
class ElfInfo:
    path: str
    identity: Identity
    soname: Optional[str]
    needed: Tuple[str, ...]  # DT_NEEDED, in order
    rpath: Tuple[str, ...]  # DT_RPATH split on ':', tokens ($ORIGIN, ...) unexpanded
    runpath: Tuple[str, ...]  # DT_RUNPATH, likewise
    nodeflib: bool  # DF_1_NODEFLIB: ld.so skips the cache's system entries and the default dirs
    undefined: Tuple[Symbol, ...]  # undefined, non-weak, non-local .dynsym entries, in table order
    version_needs: Tuple[VersionNeed, ...]
    # None when there is no .gnu.version_d (an unversioned library), () when only the base entry.
    version_definitions: Optional[Tuple[str, ...]]
    sections: Tuple[str, ...]


class _Section(NamedTuple):
    number: int
    type: int
    offset: int
    size: int
    link: int


class SymbolLayout(NamedTuple):
    """Where Elf32_Sym / Elf64_Sym keep the fields we read (the two orders differ)."""

    format: str
    name: int  # field positions in the unpacked tuple
    info: int
    shndx: int
    value: int
    shndx_at: int  # byte offset of st_shndx in the entry


SYMBOL_LAYOUTS = {32: SymbolLayout("IIIBBH", 0, 3, 5, 1, 14), 64: SymbolLayout("IBBHQQ", 0, 1, 3, 4, 6)}
READ_ERRORS = (ValueError, OSError, struct.error, IndexError, ELFError)


def _parse_identity(head: bytes, path: str) -> Tuple[Identity, str]:
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        raise ElfError(f"{path}: not an ELF file")
    endian = "<" if head[5] == 1 else ">"
    (machine,) = struct.unpack_from(endian + "H", head, 18)
    return Identity(32 * head[4], head[5] == 1, _MACHINES.get(machine, f"EM_{machine}")), endian


def open_regular(path: PathLike) -> BinaryIO:
    """`path` opened for reading if it is a regular file (a link is followed). A FIFO or a
    device named by a facts file or a rank record is refused before any read: opened
    non-blocking, it can neither hang nor stream without end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
    return os.fdopen(fd, "rb")


def identify(path: PathLike) -> Optional[Identity]:
    """The identity from the first 20 bytes; None for a file that is not ELF or cannot be read."""
    try:
        with open_regular(path) as handle:
            return _parse_identity(handle.read(20), os.fspath(path))[0]
    except (OSError, ElfError):
        return None


class MappedElf:
    """One ELF file mapped read-only, with its identity and section table (struct, no pyelftools)."""

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        self.data: Optional[mmap.mmap] = None
        try:
            self.file = open_regular(self.path)  # held open by the mapping until close()
        except OSError as exc:
            raise ElfError(f"{self.path}: {exc.strerror or exc}") from exc
        try:
            self.data = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)
            self.identity, self.endian = _parse_identity(self.data[:20], self.path)
            self.table = self._section_table(self.data)
        except BaseException as exc:
            self.close()
            if isinstance(exc, READ_ERRORS):
                raise ElfError(f"{self.path}: unreadable ELF ({exc})") from exc
            raise
        self.sections: Dict[str, _Section] = {}
        for name, section in self.table:
            self.sections.setdefault(name, section)

    def _section_table(self, data: mmap.mmap) -> List[Tuple[str, _Section]]:
        is64 = self.identity.elf_class == 64
        (shoff,) = struct.unpack_from(self.endian + ("Q" if is64 else "I"), data, 0x28 if is64 else 0x20)
        entsize, count, names = struct.unpack_from(self.endian + "HHH", data, 0x3A if is64 else 0x2E)
        if shoff == 0:
            return []
        header = struct.Struct(self.endian + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII"))
        first = header.unpack_from(data, shoff)
        count = count or first[5]  # more than 0xff00 sections: the count is in section 0's sh_size
        names = first[6] if names == SHN_XINDEX else names  # ... and the index in its sh_link
        rows = [header.unpack_from(data, shoff + i * entsize) for i in range(count)]
        strings = rows[names][4]
        return [(self.cstring(strings + row[0]), _Section(i, row[1], row[4], row[5], row[6]))
                for i, row in enumerate(rows)]

    def cstring(self, offset: int) -> str:
        assert self.data is not None
        end = self.data.find(b"\0", offset)
        if end < 0:
            raise ElfError(f"{self.path}: unterminated string at {offset:#x}")
        return self.data[offset:end].decode("utf-8", "replace")

    def first(self, sh_type: int) -> Optional[_Section]:
        return next((section for _, section in self.table if section.type == sh_type), None)

    def contents(self, section: _Section) -> bytes:
        assert self.data is not None
        if section.type == SHT_NOBITS:
            return b""
        if section.offset + section.size > len(self.data):
            raise ElfError(f"{self.path}: section {section.number} runs past the end of the file")
        return self.data[section.offset:section.offset + section.size]

    def close(self) -> None:
        if self.data is not None:
            self.data.close()
            self.data = None
        if not self.file.closed:
            self.file.close()

    def __enter__(self) -> MappedElf:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_section(path: PathLike, name: str) -> Optional[bytes]:
    """The bytes of section `name` as stored; None when absent, b"" for SHT_NOBITS."""
    with MappedElf(path) as image:
        section = image.sections.get(name)
        return None if section is None else image.contents(section)


@contextmanager
def section_view(path: PathLike, name: str) -> Iterator[Optional[memoryview]]:
    """Section `name` as a view into the mapped file, valid inside the block: reading a 240 MB
    .nv_fatbin's entry headers then touches a few pages instead of copying the whole section."""
    with MappedElf(path) as image:
        section = image.sections.get(name)
        if section is None or section.type == SHT_NOBITS:
            yield None
            return
        assert image.data is not None
        if section.offset + section.size > len(image.data):
            raise ElfError(f"{image.path}: section {section.number} runs past the end of the file")
        with memoryview(image.data) as whole, \
                whole[section.offset:section.offset + section.size] as view:
            yield view


class _Dynamic(NamedTuple):
    soname: Optional[str]
    needed: Tuple[str, ...]
    rpath: Tuple[str, ...]
    runpath: Tuple[str, ...]
    nodeflib: bool


DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_FLAGS_1 = 1, 14, 15, 29, 0x6FFFFFFB


def _read_dynamic(image: MappedElf) -> _Dynamic:
    """The .dynamic entries (d_tag, d_val pairs; strings in its linked string table)."""
    section = image.first(SHT_DYNAMIC)
    if section is None:
        return _Dynamic(None, (), (), (), False)
    strings = image.table[section.link][1].offset
    entry = struct.Struct(image.endian + ("qQ" if image.identity.elf_class == 64 else "iI"))
    raw = image.contents(section)
    soname: Optional[str] = None
    needed: List[str] = []
    rpath: List[str] = []
    runpath: List[str] = []
    flags_1 = 0
    for tag, value in entry.iter_unpack(raw[:len(raw) - len(raw) % entry.size]):
        if tag == 0:  # DT_NULL
            break
        if tag == DT_NEEDED:
            needed.append(image.cstring(strings + value))
        elif tag == DT_SONAME:
            soname = image.cstring(strings + value)
        # An empty DT_RPATH/DT_RUNPATH is ignored by ld.so (decompose_rpath), not "the cwd".
        elif tag in (DT_RPATH, DT_RUNPATH) and image.cstring(strings + value):
            (rpath if tag == DT_RPATH else runpath).extend(image.cstring(strings + value).split(":"))
        elif tag == DT_FLAGS_1:
            flags_1 = value
    return _Dynamic(soname, tuple(needed), tuple(rpath), tuple(runpath), bool(flags_1 & DF_1_NODEFLIB))


def _chain(data: bytes, size: int, next_at: int, endian: str) -> Iterator[int]:
    """Offsets of a chain of version records (Verneed/Verdef, Vernaux/Verdaux) in `data`,
    each linking to the next by a byte offset; a corrupt, cyclic chain is cut off."""
    offset, word = 0, struct.Struct(endian + "I")
    for _ in range(len(data) // size + 1):
        if offset + size > len(data):
            return
        yield offset
        (following,) = word.unpack_from(data, offset + next_at)
        if not following:
            return
        offset += following


def _version_needs(image: MappedElf) -> Tuple[Tuple[VersionNeed, ...], Dict[int, Tuple[str, str]]]:
    """The needs per library, and the version index -> (name, file) map .gnu.version refers to.
    Elf_Verneed: vn_version, vn_cnt (halves), vn_file, vn_aux, vn_next; Elf_Vernaux: vna_hash,
    vna_flags, vna_other (halves), vna_name, vna_next."""
    section = image.first(SHT_GNU_VERNEED)
    if section is None:
        return (), {}
    data, strings = image.contents(section), image.table[section.link][1].offset
    need, aux = struct.Struct(image.endian + "HHIII"), struct.Struct(image.endian + "IHHII")
    needs: List[VersionNeed] = []
    names: Dict[int, Tuple[str, str]] = {}
    for at in _chain(data, need.size, 12, image.endian):
        _, _, file_at, aux_at, _ = need.unpack_from(data, at)
        library = image.cstring(strings + file_at)
        versions: List[str] = []
        for offset in _chain(data[at + aux_at:], aux.size, 12, image.endian):
            _, flags, other, name_at, _ = aux.unpack_from(data, at + aux_at + offset)
            name = image.cstring(strings + name_at)
            names[other & ~VERSYM_HIDDEN] = (name, library)
            if not flags & VER_FLG_WEAK:
                versions.append(name)
        needs.append(VersionNeed(library, tuple(versions)))
    return tuple(needs), names


def _version_definitions(image: MappedElf) -> Optional[Tuple[str, ...]]:
    """Elf_Verdef: vd_version, vd_flags, vd_ndx, vd_cnt (halves), vd_hash, vd_aux, vd_next."""
    section = image.first(SHT_GNU_VERDEF)
    if section is None:
        return None
    data, strings = image.contents(section), image.table[section.link][1].offset
    verdef, word = struct.Struct(image.endian + "HHHHIII"), struct.Struct(image.endian + "I")
    names = []
    for at in _chain(data, verdef.size, 16, image.endian):
        _, flags, _, count, _, aux_at, _ = verdef.unpack_from(data, at)
        # The base definition names the file itself (its soname), not a version.
        if count and not flags & VER_FLG_BASE and at + aux_at + 4 <= len(data):
            names.append(image.cstring(strings + word.unpack_from(data, at + aux_at)[0]))
    return tuple(names)


def undefined_indices(raw: bytes, size: int, shndx_at: int) -> Iterator[int]:
    """Entries whose st_shndx is SHN_UNDEF: a C-speed search of that two-byte column (a few
    thousand hits among libtorch_cpu's 75k entries), not a Python loop over every entry."""
    low, high = raw[shndx_at::size], raw[shndx_at + 1::size]  # either byte order: both zero
    index = low.find(0)
    while index >= 0:
        if high[index] == 0:
            yield index
        index = low.find(0, index + 1)


def _undefined_symbols(image: MappedElf, version_names: Dict[int, Tuple[str, str]]) -> Tuple[Symbol, ...]:
    dynsym = image.first(SHT_DYNSYM)
    if dynsym is None:
        return ()
    strings = image.table[dynsym.link][1].offset
    layout = SYMBOL_LAYOUTS[image.identity.elf_class]
    entry = struct.Struct(image.endian + layout.format)
    raw = image.contents(dynsym)
    raw = raw[:len(raw) - len(raw) % entry.size]
    versym = image.first(SHT_GNU_VERSYM)
    versions = image.contents(versym) if versym else b""
    found = []
    for index in undefined_indices(raw, entry.size, layout.shndx_at):
        fields = entry.unpack_from(raw, index * entry.size)
        if index == 0 or fields[layout.info] >> 4 in (STB_LOCAL, STB_WEAK):
            continue
        name = image.cstring(strings + fields[layout.name])
        if name:
            version: Optional[Tuple[str, str]] = None
            if len(versions) >= 2 * index + 2:
                (number,) = struct.unpack_from(image.endian + "H", versions, 2 * index)
                version = version_names.get(number & ~VERSYM_HIDDEN)
            found.append(Symbol(name, *version) if version else Symbol(name))
    return tuple(found)


def read_elf(path: PathLike, *, symbols: bool = True) -> ElfInfo:
    """The dynamic-linking facts of one file; `symbols=False` skips the .dynsym scan."""
    with MappedElf(path) as image:
        try:
            dynamic = _read_dynamic(image)
            needs, version_names = _version_needs(image)
            definitions = _version_definitions(image)
            undefined = _undefined_symbols(image, version_names) if symbols else ()
        except READ_ERRORS as exc:
            raise ElfError(f"{image.path}: unreadable ELF ({exc})") from exc
        return ElfInfo(
            path=image.path, identity=image.identity, soname=dynamic.soname, needed=dynamic.needed,
            rpath=dynamic.rpath, runpath=dynamic.runpath, nodeflib=dynamic.nodeflib,
            undefined=undefined, version_needs=needs, version_definitions=definitions,
            sections=tuple(name for name, _ in image.table if name))
