"""A cause the text shows: its category, the lines that show it, how directly, and what to do."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Sequence, Tuple

from fadoctor.report import Category, Remedy, Severity
from fadoctor.triage.text import Quote

# How directly the text shows a cause, from the strongest: an error message that names the
# mechanism; a tool's log line that does; stated versions that imply it; a wrapper's message,
# which hides the real error; prose that only hints at it.
NAMED, LOGGED, IMPLIED, WRAPPED, HINTED = 90, 80, 60, 40, 30
# An exception raised inside one package's code, whose message names no cause: the package
# (a beta) is the suspect, below any message that names one.
RAISED_IN = 45
# No message shows any cause: the GPU the report names makes one likely (a last resort).
GUESSED = 20

STRENGTH_WORDS = {NAMED: "the quoted error message itself names this mechanism",
                  LOGGED: "the quoted build or log output shows this mechanism",
                  IMPLIED: "the versions the report states imply it",
                  RAISED_IN: "the error was raised inside this package's own code, and no "
                             "message names another cause",
                  WRAPPED: "a wrapper's message says so, and such messages hide the real error",
                  HINTED: "the report's own words describe it, without an error message",
                  GUESSED: "a guess: no message shows a cause, and this is the likeliest one on "
                           "the GPU the report names"}


@dataclass
class Signal:
    mechanism: str
    category: Category
    message: str
    quotes: List[Quote]
    strength: int
    remedies: List[Remedy] = field(default_factory=list)
    severity: Severity = Severity.ERROR
    details: Dict[str, Any] = field(default_factory=dict)
    # What would confirm or sharpen it: (what is missing, the command that reveals it).
    needs: List[Tuple[str, str]] = field(default_factory=list)

    @property
    def first_line(self) -> int:
        return min((q.line for q in self.quotes), default=10 ** 9)


def dedupe(quotes: Sequence[Quote]) -> List[Quote]:
    seen, out = set(), []
    for q in sorted(quotes, key=lambda q: q.line):
        if (q.line, q.text) not in seen:
            seen.add((q.line, q.text))
            out.append(q)
    return out


Mechanism = Callable[[Any], List[Signal]]


# A failure said in words or printed (English and the Chinese most reports here use).
FAILED = re.compile(r"\b(?:error|errors|failed|fails?|failure|exception|crash(?:es|ed)?|"
                     r"not (?:work(?:ing)?|supported|compatible)|incompatib\w*|compatibility)\b"
                     r"|失败|报错|错误|不支持|不兼容", re.I)
FAILED_NEEDLES = ("error", "fail", "exception", "crash", "not work", "not supported",
                   "not compatible", "compatib", "失败", "报错", "错误", "不支持", "不兼容")
