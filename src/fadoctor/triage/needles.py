"""Which lines of a long text can hold a literal needle, found without a scan of the whole text per
needle (pure).

Triage asks one text for about a thousand needles; on a pasted log of megabytes a scan per needle
is most of its time. This index cuts the distinct lines into blocks of BLOCK lines and records,
for each word (a run of `\\w`), the blocks that hold it, as the bits of an int. A needle's words
bound where it can lie: a word with a non-word character on both sides inside the needle is a
whole word of the line that holds the needle; a first word followed by one ends a word of that
line, a last word preceded by one begins a word, and a needle of one word lies inside a word. The
words of the text that fit are found in its vocabulary (each distinct word once, a far shorter
text), and only the blocks holding one of them are searched. The answer is exact: the blocks are a
superset, and str.find decides within them.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import cached_property
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

BLOCK = 16  # lines a block: smaller blocks narrow the search, larger ones build faster
_WORD = re.compile(r"\w+")
DENSE = 4  # a needle in more than a DENSE-th of the blocks is searched in the whole text
_MANY = 64  # vocabulary words one needle's edge may match before it narrows nothing worth it


class NeedleIndex:
    """The blocks of `text` (distinct lines joined by newlines, starting at `starts`) each word
    occurs in."""

    def __init__(self, text: str, starts: Sequence[int]) -> None:
        self.text, self.starts = text, starts
        blocks = (len(starts) + BLOCK - 1) // BLOCK
        self.bounds = [starts[b * BLOCK] for b in range(blocks)] + [len(text)]
        self.full = (1 << blocks) - 1
        masks: Dict[str, int] = {}
        for block in range(blocks):
            bit = 1 << block
            for word in set(_WORD.findall(text, self.bounds[block], self.bounds[block + 1])):
                masks[word] = masks.get(word, 0) | bit
        self.masks = masks
        self._edges: Dict[Tuple[str, bool, bool], int] = {}
        self.vocabulary = tuple(masks)
        self.vocabulary_text = "\n" + "\n".join(self.vocabulary) + "\n"
        self.vocabulary_starts: List[int] = []
        at = 1
        for word in self.vocabulary:
            self.vocabulary_starts.append(at)
            at += len(word) + 1

    def blocks(self, needle: str) -> int:
        """The blocks that can hold `needle`, as bits (all of them where its words narrow
        nothing)."""
        words = list(_WORD.finditer(needle))
        mask = self.full
        for word in words:  # whole words first: a dict lookup each
            if word.start() > 0 and word.end() < len(needle):
                mask &= self.masks.get(word.group(), 0)
        for word in {words[0], words[-1]} if words and mask else ():
            starts, ends = word.start() == 0, word.end() == len(needle)
            if starts or ends:
                mask &= self._within(word.group(), starts, ends)
        return mask

    def _within(self, word: str, starts: bool, ends: bool) -> int:
        """The blocks holding a word of the text that ends with `word` (`starts`: the needle
        starts with it), begins with it (`ends`), or holds it (both). Remembered: needles share
        their first and last words ("flash", "cuda")."""
        key = (word, starts, ends)
        mask = self._edges.get(key)
        if mask is None:
            mask = self._edges[key] = self._search_within(word, starts, ends)
        return mask

    def _search_within(self, word: str, starts: bool, ends: bool) -> int:
        if starts != ends:  # a prefix or a suffix of words: a range of a sorted vocabulary
            return self._affixed(word, self._by_start) if ends else \
                self._affixed(word[::-1], self._by_end)
        mask, found = 0, 0  # a word inside words: the vocabulary scanned
        at = self.vocabulary_text.find(word)
        while at != -1:
            index = bisect_right(self.vocabulary_starts, at) - 1
            mask |= self.masks[self.vocabulary[index]]
            found += 1
            if mask == self.full or found > _MANY:
                return self.full
            following = index + 1
            if following == len(self.vocabulary):
                break
            at = self.vocabulary_text.find(word, self.vocabulary_starts[following])
        return mask

    @cached_property
    def _by_start(self) -> List[str]:
        return sorted(self.vocabulary)

    @cached_property
    def _by_end(self) -> List[str]:
        """The vocabulary's words reversed, sorted: those ending with a word are a range."""
        return sorted(w[::-1] for w in self.vocabulary)

    def _affixed(self, prefix: str, words: List[str]) -> int:
        """The blocks of the words (of `words`, sorted) that begin with `prefix` (reversed words:
        end with it), or all blocks where more than _MANY do."""
        mask, first = 0, bisect_left(words, prefix)
        for at in range(first, len(words)):
            if not words[at].startswith(prefix):
                break
            mask |= self.masks[words[at] if words is self._by_start else words[at][::-1]]
            if mask == self.full or at - first >= _MANY:  # more than _MANY words
                return self.full
        return mask

    def holding(self, needle: str) -> Optional[List[int]]:
        """The lines holding `needle`, in order; None where its words narrow nothing (the caller
        scans the whole text)."""
        mask = self.blocks(needle) if "\n" not in needle else self.full
        if bin(mask).count("1") * DENSE > len(self.bounds):
            return None
        return list(self._lines(needle, mask))

    def scan(self, needle: str) -> Iterator[int]:
        """The lines holding `needle`, in order, each found when it is asked for: a caller that
        wants the first line stops the search there."""
        return self._lines(needle, self.blocks(needle) if "\n" not in needle else self.full)

    def _lines(self, needle: str, mask: int) -> Iterator[int]:
        while mask:
            lowest = mask & -mask
            block = lowest.bit_length() - 1
            mask ^= lowest
            end = self.bounds[block + 1]
            at = self.text.find(needle, self.bounds[block], end)
            while at != -1:
                index = bisect_right(self.starts, at) - 1
                yield index
                following = index + 1
                if following == len(self.starts) or self.starts[following] >= end:
                    break
                at = self.text.find(needle, self.starts[following], end)
