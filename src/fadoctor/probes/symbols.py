"""Symbol lookup in the libraries ld.so would load, through their hash tables; C++ demangling.

API:
    SymbolIndex(path).defines(name) -> bool   through .gnu.hash, else .hash (else one scan)
    SymbolIndex(path).binds(name, version)    whether a reference, versioned or not, binds here
                                              by ld.so's rules (dl-lookup.c's check_match)
    gnu_hash(name), sysv_hash(name)           the DT_GNU_HASH and DT_HASH functions
    demangle(names) -> Dict[str, str]         libstdc++'s __cxa_demangle, in this process

A 450 MB libtorch_cpu.so defines 75k dynamic symbols; enumerating them costs seconds, while a
lookup reads a bloom word, a bucket, a few chain words and the candidate entries of the mapping.
"""

from __future__ import annotations

import ctypes
import functools
import struct
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple

from fadoctor.probes.elf import (
    READ_ERRORS,
    SHN_UNDEF,
    SHT_DYNSYM,
    SHT_GNU_HASH,
    SHT_GNU_VERDEF,
    SHT_GNU_VERSYM,
    SHT_HASH,
    STB_LOCAL,
    SYMBOL_LAYOUTS,
    VER_FLG_BASE,
    VERSYM_HIDDEN,
    ElfError,
    MappedElf,
    PathLike,
    SymbolLayout,
)

SHN_ABS = 0xFFF1
STT_TLS = 6
# The symbol types ld.so binds a reference to (do_lookup_x: NOTYPE OBJECT FUNC COMMON TLS IFUNC).
BINDABLE_TYPES: FrozenSet[int] = frozenset((0, 1, 2, 5, 6, 10))


@functools.lru_cache(maxsize=1 << 16)
def gnu_hash(name: bytes) -> int:
    """The DT_GNU_HASH function (glibc's dl_new_hash); memoized: one name is looked up in many
    libraries, and hashing is most of a lookup's cost in Python."""
    h = 5381
    for byte in name:
        h = (h * 33 + byte) & 0xFFFFFFFF
    return h


def sysv_hash(name: bytes) -> int:
    """The DT_HASH function of the System V ABI."""
    h = 0
    for byte in name:
        h = ((h << 4) + byte) & 0xFFFFFFFF  # C's unsigned 32-bit wrap-around
        high = h & 0xF0000000
        if high:
            h ^= high >> 24
        h &= ~high
    return h


class SymbolIndex:
    """The symbols one library defines, looked up through its hash table without enumerating them.

    Opens and maps the file once; each lookup reads a bloom word, a bucket, a few chain words and
    the candidate symbols. A library without a hash section is scanned once instead.
    """

    def __init__(self, path: PathLike) -> None:
        self._image = MappedElf(path)
        self.path = self._image.path
        try:
            self._prepare()
        except BaseException as exc:
            self._image.close()
            if isinstance(exc, READ_ERRORS):
                raise ElfError(f"{self.path}: unreadable symbol tables ({exc})") from exc
            raise

    def _prepare(self) -> None:
        image, data = self._image, self._image.data
        assert data is not None
        self._data = data
        self._layout = SYMBOL_LAYOUTS[image.identity.elf_class]
        self._symbol = struct.Struct(image.endian + self._layout.format)
        self._word = struct.Struct(image.endian + "I")
        self._half = struct.Struct(image.endian + "H")
        self._scanned: Optional[Dict[bytes, List[int]]] = None
        self._nbuckets = self._bloom_size = 0
        self._versym: Optional[int] = None  # offset of .gnu.version; None: an unversioned library
        self._verdefs: Optional[Dict[int, str]] = None  # version index -> name, read when needed
        self._find: Callable[[bytes], Iterator[int]] = lambda name: iter(())  # no .dynsym
        dynsym = image.first(SHT_DYNSYM)
        if dynsym is None:
            return
        self._dynsym, self._strings = dynsym, image.table[dynsym.link][1].offset
        versym = image.first(SHT_GNU_VERSYM)
        self._versym = versym.offset if versym is not None and versym.size else None
        hashes = [s for _, s in image.table if s.link == dynsym.number and s.type in (SHT_GNU_HASH, SHT_HASH)]
        gnu = next((s for s in hashes if s.type == SHT_GNU_HASH), None)
        sysv = next((s for s in hashes if s.type == SHT_HASH), None)
        if gnu is not None:
            self._prepare_gnu(gnu.offset)
            self._find = self._find_gnu if self._nbuckets and self._bloom_size else self._find
        elif sysv is not None:
            # nbucket, nchain, then 4-byte words (on every ABI but s390x's and Alpha's).
            (self._nbuckets,) = self._word.unpack_from(data, sysv.offset)
            self._buckets = sysv.offset + 8
            self._chains = self._buckets + 4 * self._nbuckets
            self._find = self._find_sysv if self._nbuckets else self._find
        else:
            self._find = self._find_scan

    def _prepare_gnu(self, offset: int) -> None:
        self._nbuckets, self._symoffset, self._bloom_size, self._shift = struct.unpack_from(
            self._image.endian + "4I", self._data, offset)
        self._bits = self._image.identity.elf_class  # bloom words are ELFCLASS bits wide
        self._bloom_word = struct.Struct(self._image.endian + ("Q" if self._bits == 64 else "I"))
        self._bloom = offset + 16
        self._buckets = self._bloom + self._bloom_size * self._bloom_word.size
        self._chains = self._buckets + 4 * self._nbuckets

    def defines(self, name: str) -> bool:
        """Whether ld.so could bind a reference to `name` here (any version of it)."""
        return next(self._definitions(name), None) is not None

    def binds(self, name: str, version: Optional[str] = None) -> bool:
        """Whether ld.so binds a reference to `name` here: one bound to `version` (a versioned
        reference, "cudaMalloc@libcudart.so.12") or an unversioned one (dl-lookup.c's check_match
        and do_lookup_x)."""
        if self._versym is None:
            return self.defines(name)  # an unversioned library: any definition binds
        single = 0
        for index in self._definitions(name):
            (raw,) = self._half.unpack_from(self._data, self._versym + 2 * index)
            number, hidden = raw & ~VERSYM_HIDDEN, bool(raw & VERSYM_HIDDEN)
            defined = self._version_names().get(number)
            if version is not None:
                # The same version, or a definition of no version (index 0 or 1) that is not hidden.
                if defined == version or (defined is None and not hidden):
                    return True
            elif number < 3:
                return True  # unversioned, the base version or the oldest one: the default binding
            elif not hidden:
                single += 1
        # An unversioned reference still takes a versioned definition when it is the only one.
        return version is None and single == 1

    def _definitions(self, name: str) -> Iterator[int]:
        try:
            yield from self._find(name.encode())
        except (struct.error, IndexError, ValueError) as exc:
            raise ElfError(f"{self.path}: corrupt hash table ({exc})") from exc

    def _version_names(self) -> Dict[int, str]:
        """Each non-base version index this library defines -> its name (.gnu.version_d)."""
        if self._verdefs is None:
            self._verdefs = _verdef_names(self._image, self._half, self._word)
        return self._verdefs

    def _binds(self, index: int, name: bytes) -> bool:
        fields = self._symbol.unpack_from(self._data, self._dynsym.offset + index * self._symbol.size)
        start = self._strings + fields[self._layout.name]
        if self._data[start:start + len(name) + 1] != name + b"\0":
            return False
        return _is_definition(fields, self._layout)

    def _find_gnu(self, name: bytes) -> Iterator[int]:
        h = gnu_hash(name)
        bits = self._bits
        (word,) = self._bloom_word.unpack_from(self._data, self._bloom + ((h // bits) % self._bloom_size)
                                               * self._bloom_word.size)
        if not (word >> (h % bits)) & (word >> ((h >> self._shift) % bits)) & 1:
            return
        (index,) = self._word.unpack_from(self._data, self._buckets + 4 * (h % self._nbuckets))
        if index < self._symoffset:  # 0: an empty bucket
            return
        while True:
            (chained,) = self._word.unpack_from(self._data, self._chains + 4 * (index - self._symoffset))
            if (chained | 1) == (h | 1) and self._binds(index, name):
                yield index
            if chained & 1:  # the low bit ends a bucket's chain
                return
            index += 1

    def _find_sysv(self, name: bytes) -> Iterator[int]:
        (index,) = self._word.unpack_from(self._data, self._buckets + 4 * (sysv_hash(name) % self._nbuckets))
        seen = 0
        while index != 0 and seen <= self._dynsym.size:  # `seen` bounds a corrupt, cyclic chain
            if self._binds(index, name):
                yield index
            (index,) = self._word.unpack_from(self._data, self._chains + 4 * index)
            seen += 1

    def _find_scan(self, name: bytes) -> Iterator[int]:
        if self._scanned is None:
            raw = self._image.contents(self._dynsym)
            rows = self._symbol.iter_unpack(raw[:len(raw) - len(raw) % self._symbol.size])
            scanned: Dict[bytes, List[int]] = {}
            for index, row in enumerate(rows):
                if _is_definition(row, self._layout):
                    key = self._image.cstring(self._strings + row[self._layout.name]).encode()
                    scanned.setdefault(key, []).append(index)
            self._scanned = scanned
        yield from self._scanned.get(name, ())

    def close(self) -> None:
        self._image.close()

    def __enter__(self) -> SymbolIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _verdef_names(image: MappedElf, half: struct.Struct, word: struct.Struct) -> Dict[int, str]:
    """Elf_Verdef entries (vd_version, vd_flags, vd_ndx, vd_cnt: halves; vd_hash, vd_aux, vd_next:
    words) and the first Elf_Verdaux of each (vda_name, vda_next), as glibc's
    _dl_check_map_versions reads them; the base entry names the file and is left out."""
    section = image.first(SHT_GNU_VERDEF)
    if section is None:
        return {}
    data = image.contents(section)
    strings = image.table[section.link][1].offset
    names: Dict[int, str] = {}
    offset = 0
    for _ in range(len(data) // 20 + 1):  # bounds a corrupt, cyclic vd_next chain
        if offset + 20 > len(data):
            break
        flags, number = half.unpack_from(data, offset + 2)[0], half.unpack_from(data, offset + 4)[0]
        aux, following = word.unpack_from(data, offset + 12)[0], word.unpack_from(data, offset + 16)[0]
        if not flags & VER_FLG_BASE and offset + aux + 4 <= len(data):
            names[number & ~VERSYM_HIDDEN] = image.cstring(strings + word.unpack_from(data, offset + aux)[0])
        if not following:
            break
        offset += following
    return names


def _is_definition(fields: Tuple[int, ...], layout: SymbolLayout) -> bool:
    """ld.so's acceptance test (do_lookup_x): defined, not local, a bindable type, a value."""
    shndx, info = fields[layout.shndx], fields[layout.info]
    kind = info & 0xF
    return (shndx != SHN_UNDEF and info >> 4 != STB_LOCAL and kind in BINDABLE_TYPES
            and (fields[layout.value] != 0 or shndx == SHN_ABS or kind == STT_TLS))


def demangle(names: Iterable[str]) -> Dict[str, str]:
    """Each name -> its C++ spelling; a name libstdc++ cannot demangle maps to itself."""
    one = _demangler()
    return {name: one(name) if one is not None else name for name in names}


@functools.lru_cache(maxsize=1)
def _demangler() -> Optional[Callable[[str], str]]:
    try:
        cxa_demangle = getattr(ctypes.CDLL("libstdc++.so.6"), "__cxa_demangle")
        free = ctypes.CDLL(None).free
    except (OSError, AttributeError):
        return None
    cxa_demangle.restype = ctypes.c_void_p  # a malloc'ed buffer that we must free ourselves
    cxa_demangle.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    free.argtypes, free.restype = [ctypes.c_void_p], None

    def one(name: str) -> str:
        if not name.startswith("_Z"):
            return name
        status = ctypes.c_int(-1)
        buffer = cxa_demangle(name.encode(), None, None, ctypes.byref(status))
        if not buffer:
            return name
        try:
            return ctypes.string_at(buffer).decode("utf-8", "replace") if status.value == 0 else name
        finally:
            free(buffer)

    return one
