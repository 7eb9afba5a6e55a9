"""The pasted text as numbered lines, and the quotes a finding cites from it (pure).

Whatever arrives — bytes in any encoding, terminal colour codes, carriage-return progress bars,
one enormous line — becomes a list of short lines that every parser reads the same way, so a
finding can always point at the line it used.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, List, Pattern, Sequence, Set, Tuple, Union

MAX_LINE = 2000  # longer lines are cut into pieces of this size (same line number)
MAX_QUOTE = 300  # a quote shows at most this much of its line

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Quote:
    """One line of the pasted text, as the user wrote it (1-based line number)."""

    line: int
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}"


@dataclass(frozen=True)
class Pasted:
    """The text, split into pieces: `lines[i]` is part of the user's line `numbers[i]` (a long
    line is several pieces with one number). Parsers address pieces by index."""

    lines: Tuple[str, ...]
    numbers: Tuple[int, ...]

    def quote(self, index: int) -> Quote:
        text = self.lines[index].strip()
        if len(text) > MAX_QUOTE:
            text = text[:MAX_QUOTE - 1] + "…"
        return Quote(self.numbers[index], text)

    def window(self, index: int, before: int, after: int) -> Iterator[Tuple[int, str]]:
        start, end = max(0, index - before), min(len(self.lines), index + after + 1)
        for i in range(start, end):
            yield i, self.lines[i]

    @cached_property
    def joined(self) -> str:
        return "\n".join(self.lines)

    @cached_property
    def starts(self) -> List[int]:
        """Where each piece starts in `joined`."""
        out, at = [], 0
        for line in self.lines:
            out.append(at)
            at += len(line) + 1
        return out

    @cached_property
    def lower(self) -> str:
        return self.joined.lower()

    def index_at(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def containing(self, needles: Sequence[str], first: bool = False) -> List[int]:
        """The pieces holding any of `needles` (lower case), in order. str.find over the whole
        text is C-fast, so the per-line parsers run only where something can be found."""
        found: Set[int] = set()
        lower, starts = self.lower, self.starts
        for needle in needles:
            at = lower.find(needle)
            while at != -1:
                index = self.index_at(at)
                found.add(index)
                if first:
                    break
                end = starts[index + 1] if index + 1 < len(starts) else len(lower)
                at = lower.find(needle, end)
        return sorted(found)

    def matching(self, pattern: Pattern[str]) -> List[int]:
        """The pieces that `pattern` matches at their start (an anchored test per line)."""
        return [i for i, line in enumerate(self.lines) if pattern.match(line)]


def decode(raw: Union[bytes, str]) -> str:
    """Text from bytes: UTF-8 (with or without BOM), UTF-16 with a BOM, else Latin-1."""
    if isinstance(raw, str):
        return raw
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace")


def split(raw: Union[bytes, str]) -> Pasted:
    """Normalise and number the lines: colour codes and control characters go, a carriage return
    (a progress bar redrawing itself) ends a line, a line longer than MAX_LINE is cut."""
    text = _CONTROL.sub("", _ANSI.sub("", decode(raw)).replace("\r\n", "\n").replace("\r", "\n"))
    lines: List[str] = []
    numbers: List[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        pieces = [line[i:i + MAX_LINE] for i in range(0, len(line), MAX_LINE)] or [""]
        lines.extend(pieces)
        numbers.extend([number] * len(pieces))
    return Pasted(tuple(lines), tuple(numbers))
