"""The pasted text as numbered lines, and the quotes a finding cites from it (pure).

Whatever arrives — bytes in any encoding, terminal colour codes, carriage-return progress bars,
one enormous line — becomes a list of short lines that every parser reads the same way, so a
finding can always point at the line it used.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, Iterator, List, Pattern, Sequence, Set, Tuple, Union

from fadoctor.triage.needles import NeedleIndex

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
        return _offsets(self.lines)

    @cached_property
    def lower_lines(self) -> Tuple[str, ...]:
        return tuple(line.lower() for line in self.lines)

    @cached_property
    def lower(self) -> str:
        return "\n".join(self.lower_lines)

    @cached_property
    def lower_starts(self) -> List[int]:
        """Where each piece starts in `lower` (lower-casing can change a length)."""
        return _offsets(self.lower_lines)

    def index_at(self, offset: int) -> int:
        """The piece at an offset of `joined`."""
        return bisect_right(self.starts, offset) - 1

    def containing(self, needles: Sequence[str], first: bool = False) -> List[int]:
        """The pieces holding any of `needles` (lower case), in order. A needle's words pick the
        blocks of lines it can be in (needles.NeedleIndex), and str.find searches those; one its
        words do not narrow is found over the whole text, or line by line where it is frequent,
        so that the per-line parsers run only where something can be found. Remembered per
        text: the catalog's hundreds of entries share their needles."""
        return list(self.holding(needles, first))

    def holding(self, needles: Sequence[str], first: bool = False) -> Sequence[int]:
        """`containing`, remembered: the caller reads it and changes nothing."""
        key = (tuple(needles), first)
        memo: Dict[Tuple[Tuple[str, ...], bool], List[int]] = self.__dict__.setdefault("_memo", {})
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._containing(needles, first)
        return found

    def _containing(self, needles: Sequence[str], first: bool) -> List[int]:
        found: Set[int] = set()
        for needle in needles:
            hits = self._needle(needle)
            if hits:
                found.update(hits[:1] if first else hits)
        out = sorted(found)
        return out[:1] if first else out

    @cached_property
    def _distinct(self) -> Tuple[str, List[int], Tuple[str, ...], List[List[int]]]:
        """Each distinct lower-cased piece once (joined, with offsets), and the pieces that hold
        it: a log repeats its lines (compile warnings, progress, retries), and a needle is
        looked for in each distinct line once."""
        at: Dict[str, List[int]] = {}
        for index, line in enumerate(self.lower_lines):
            at.setdefault(line, []).append(index)
        lines = tuple(at)
        return "\n".join(lines), _offsets(lines), lines, list(at.values())

    def _needle(self, needle: str) -> List[int]:
        """The pieces holding one needle, found once per text: mechanisms and catalog entries
        ask for the same needles in different sets."""
        memo: Dict[str, List[int]] = self.__dict__.setdefault("_needles", {})
        if needle not in memo:
            found = self._hits(needle)
            _, _, lines, members = self._distinct
            memo[needle] = found if len(lines) == len(self.lower_lines) else \
                sorted(i for d in found for i in members[d])
        return memo[needle]

    def _hits(self, needle: str) -> List[int]:
        """The distinct pieces (`_distinct`'s) holding one needle, found once per text."""
        memo: Dict[str, List[int]] = self.__dict__.setdefault("_hits_of", {})
        found = memo.get(needle)
        if found is None:
            joined, starts, lines, _ = self._distinct
            found = self._index.holding(needle) if needle else []
            if found is None:
                found = _holding(joined, starts, lines, needle)
            memo[needle] = found
        return found

    def first_holding(self, needles: Sequence[str]) -> Iterator[Tuple[str, List[int]]]:
        """Each distinct piece holding any of `needles` (lower case) in the order it first occurs,
        with the pieces that are it (lower-cased): found as they are asked for, so that a
        caller wanting the first that passes its test stops the search there."""
        _, _, lines, members = self._distinct
        known: Dict[str, List[int]] = self.__dict__.get("_hits_of", {})
        found = [iter(known[n]) if n in known else self._scan(n) for n in needles if n]
        last = -1
        for d in found[0] if len(found) == 1 else heapq.merge(*found):
            if d != last:
                last = d
                yield lines[d], members[d]

    def _scan(self, needle: str) -> Iterator[int]:
        """`_hits`, found as they are asked for; remembered once the search is done."""
        hits = []
        for d in self._index.scan(needle):
            hits.append(d)
            yield d
        self.__dict__.setdefault("_hits_of", {})[needle] = hits

    @cached_property
    def _index(self) -> NeedleIndex:
        joined, starts, _, _ = self._distinct
        return NeedleIndex(joined, starts)

    def distinct(self, indexes: List[int]) -> List[int]:
        """The first piece of each distinct content: a repeated line states nothing new."""
        done: Set[str] = set()
        out = []
        for index in indexes:
            if self.lines[index] not in done:
                done.add(self.lines[index])
                out.append(index)
        return out

    def matching(self, pattern: Pattern[str], needles: Sequence[str] = ("",)) -> List[int]:
        """The pieces holding one of `needles` that `pattern` matches at their start."""
        verdict: Dict[str, bool] = {}  # a repeated line is tested once
        out = []
        for i, line in enumerate(self.lines):
            found = verdict.get(line)
            if found is None:
                found = verdict[line] = any(n in line for n in needles) and \
                    pattern.match(line) is not None
            if found:
                out.append(i)
        return out


def _holding(text: str, starts: List[int], lines: Sequence[str], needle: str) -> List[int]:
    """The lines (joined in `text`, starting at `starts`) that hold `needle`: one pass that finds
    each hit from the next line on; a needle in many lines is taken line by line instead (a find
    and a bisect per hit cost more than `in` over each line)."""
    hits: List[int] = []
    limit = len(lines) // 16
    at = text.find(needle) if needle else -1
    while at != -1:
        index = bisect_right(starts, at) - 1
        hits.append(index)
        if len(hits) > limit:  # the rest line by line
            return hits + [i for i in range(index + 1, len(lines)) if needle in lines[i]]
        at = text.find(needle, starts[index + 1]) if index + 1 < len(starts) else -1
    return hits


def _offsets(lines: Sequence[str]) -> List[int]:
    out, at = [], 0
    for line in lines:
        out.append(at)
        at += len(line) + 1
    return out


def decode(raw: Union[bytes, str]) -> str:
    """Text from bytes: UTF-8 (with or without BOM), UTF-16 with a BOM, else UTF-8 with each bad
    byte replaced. A str keeps everything but lone surrogates, which no output could encode."""
    if isinstance(raw, str):
        return raw.encode("utf-8", "replace").decode("utf-8")
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
