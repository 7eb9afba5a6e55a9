"""The order in which ld.so's relocation of one object first refers to its undefined symbols:
which of them a failing RTLD_NOW load names. Read from the file with struct, never loaded."""

from __future__ import annotations

import struct
from typing import Dict, Iterable, Set, Tuple

from fadoctor.probes.elf import (
    READ_ERRORS,
    SHT_DYNSYM,
    SHT_REL,
    SHT_RELA,
    SYMBOL_LAYOUTS,
    ElfError,
    MappedElf,
    PathLike,
    undefined_indices,
)

# Elf64_Rela (r_offset, r_info, r_addend), Elf64_Rel, Elf32_Rela, Elf32_Rel; r_info's symbol index
# is its high 32 bits (64-bit) or high 24 (32-bit).
_ENTRIES = {(64, SHT_RELA): ("QQq", 32), (64, SHT_REL): ("QQ", 32),
            (32, SHT_RELA): ("IIi", 8), (32, SHT_REL): ("II", 8)}


def relocation_order(path: PathLike, names: Iterable[str]) -> Tuple[str, ...]:
    """`names` (undefined dynamic symbols of `path`) in the order its dynamic relocations first
    refer to them: the relocation sections in file order (.rela.dyn, then .rela.plt, as ld.so
    takes DT_RELA, then DT_JMPREL), entry by entry; names no relocation refers to come last."""
    wanted = set(names)
    with MappedElf(path) as image:
        try:
            return _ordered(image, wanted)
        except READ_ERRORS as exc:
            raise ElfError(f"{image.path}: unreadable relocations ({exc})") from exc


def _ordered(image: MappedElf, wanted: Set[str]) -> Tuple[str, ...]:
    dynsym = image.first(SHT_DYNSYM)
    if dynsym is None or not wanted:
        return tuple(sorted(wanted))
    layout = SYMBOL_LAYOUTS[image.identity.elf_class]
    symbol = struct.Struct(image.endian + layout.format)
    raw = image.contents(dynsym)
    raw = raw[:len(raw) - len(raw) % symbol.size]
    strings = image.table[dynsym.link][1].offset
    by_index: Dict[int, str] = {}
    for index in undefined_indices(raw, symbol.size, layout.shndx_at):
        name = image.cstring(strings + symbol.unpack_from(raw, index * symbol.size)[layout.name])
        if name in wanted:
            by_index[index] = name
    order: Dict[str, None] = {}
    sections = sorted((s for _, s in image.table
                       if s.type in (SHT_RELA, SHT_REL) and s.link == dynsym.number), key=lambda s: s.offset)
    for section in sections:
        layout_format, shift = _ENTRIES[(image.identity.elf_class, section.type)]
        entry = struct.Struct(image.endian + layout_format)
        data = image.contents(section)
        for fields in entry.iter_unpack(data[:len(data) - len(data) % entry.size]):
            found = by_index.get(fields[1] >> shift)
            if found is not None and found not in order:
                order[found] = None
                if len(order) == len(by_index):
                    return (*order, *sorted(wanted - set(order)))
    return (*order, *sorted(wanted - set(order)))
