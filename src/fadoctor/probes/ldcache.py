"""/etc/ld.so.cache, read as glibc's dl-cache.c reads it: the old `ld.so-1.7.0` format, the new
`glibc-ld.so.cache1.1` one, and the compat layout that holds both (never by running ldconfig).

API:
    read_ld_cache(path) -> Tuple[CacheEntry, ...]   the entries, in file order
    cache_index(path) -> Mapping[str, Tuple[str, ...]]   name -> candidate paths, memoized
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Mapping, Optional, Tuple

from fadoctor.probes.elf import PathLike

LD_CACHE = "/etc/ld.so.cache"
_OLD_MAGIC = b"ld.so-1.7.0"
_NEW_MAGIC = b"glibc-ld.so.cache1.1"
_HWCAP_EXTENSION = 1 << 62  # a new-format entry for a glibc-hwcaps subdirectory


@dataclass(frozen=True)
class CacheEntry:
    name: str
    path: str
    flags: int  # ldconfig's FLAG_* bits: library type and architecture
    hwcap: int


def read_ld_cache(path: PathLike) -> Tuple[CacheEntry, ...]:
    """The entries of an ld.so.cache in file order; the new format is preferred when both exist."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data.startswith(_NEW_MAGIC):
        return _new_cache_entries(data, 0)
    if not data.startswith(_OLD_MAGIC):
        raise ValueError(f"{os.fspath(path)}: not an ld.so.cache")
    (count,) = struct.unpack_from("=I", data, 12)  # the old format is in the host's byte order
    strings = 16 + 12 * count
    new = (strings + 7) & ~7  # glibc's ALIGN_CACHE: the new format may follow, 8-byte aligned
    if data[new:new + len(_NEW_MAGIC)] == _NEW_MAGIC:
        return _new_cache_entries(data, new)
    return tuple(CacheEntry(_cstring(data, strings + key), _cstring(data, strings + value), flags, 0)
                 for flags, key, value in struct.iter_unpack("=iII", data[16:strings]))


def _new_cache_entries(data: bytes, base: int) -> Tuple[CacheEntry, ...]:
    endian = {2: "<", 3: ">"}.get(data[base + 28], "=")  # the header's byte-order flag
    (count,) = struct.unpack_from(endian + "I", data, base + 20)
    start = base + 48
    rows = struct.iter_unpack(endian + "iIIIQ", data[start:start + 24 * count])
    # String offsets count from the start of this header, wherever the header is.
    return tuple(CacheEntry(_cstring(data, base + key), _cstring(data, base + value), flags, hwcap)
                 for flags, key, value, _, hwcap in rows)


def _cstring(data: bytes, offset: int) -> str:
    end = data.index(b"\0", offset)
    return data[offset:end].decode("utf-8", "replace")


def cache_index(path: Optional[str]) -> Mapping[str, Tuple[str, ...]]:
    """name -> candidate paths in ld.so's order of preference; empty for no, a missing or a
    corrupt cache, which ld.so ignores too."""
    if path is None:
        return {}
    try:
        status = os.stat(path)
        return _index(path, (status.st_mtime_ns, status.st_size))
    except (OSError, ValueError, struct.error):
        return {}


@lru_cache(maxsize=4)
def _index(path: str, stamp: Tuple[int, int]) -> Mapping[str, Tuple[str, ...]]:
    """Memoized per `stamp` (mtime, size), so a rerun of ldconfig is seen."""
    index: Dict[str, List[str]] = {}
    entries = read_ld_cache(path)
    # A glibc-hwcaps entry is chosen only on CPUs with that level; the baseline one always works.
    for entry in sorted(entries, key=lambda e: bool(e.hwcap & _HWCAP_EXTENSION)):
        index.setdefault(entry.name, []).append(entry.path)
    return {name: tuple(paths) for name, paths in index.items()}
