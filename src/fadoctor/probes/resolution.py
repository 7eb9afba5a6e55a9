"""Where the loader finds one DT_NEEDED entry: the vocabulary the loader model and the symbol
binding share."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional, Tuple


class How(str, Enum):
    """Where a DT_NEEDED entry was found, in ld.so's order."""

    PATH = "path"  # the entry contains a '/'
    LOADED = "loaded"  # already loaded under that name or soname
    RPATH = "rpath"
    LD_LIBRARY_PATH = "ld_library_path"
    RUNPATH = "runpath"
    LD_CACHE = "ld_cache"
    DEFAULT = "default"


@dataclass(frozen=True)
class Resolution:
    needed: str
    path: Optional[str]  # None: the loader fails with "cannot open shared object file"
    how: Optional[How]
    # Candidates ld.so passes over: another ELF class or machine (or, last, a non-ELF file,
    # where ld.so stops with "invalid ELF header" or "file too short").
    rejected: Tuple[str, ...] = ()
