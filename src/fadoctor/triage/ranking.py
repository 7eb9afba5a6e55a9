"""The order of the diagnosis: most likely cause first, by how directly the text shows each one,
then by corroboration, severity and position; each place explained (pure)."""

from __future__ import annotations

from typing import List, Tuple

from fadoctor.report import Severity
from fadoctor.triage.model import Diagnosed
from fadoctor.triage.signal import STRENGTH_WORDS, Signal

CORROBORATION = 5  # what each check reaching the same cause adds


def score(signal: Signal) -> int:
    return signal.strength + CORROBORATION * len(signal.details.get("also_found_by", []))


def _key(signal: Signal) -> Tuple[int, int, int]:
    return (-score(signal), -signal.severity.rank, signal.first_line)


def _how(signal: Signal) -> str:
    words = min(STRENGTH_WORDS.items(), key=lambda kv: abs(kv[0] - signal.strength))[1]
    if signal.mechanism.startswith("FAD"):
        words = (f"{signal.mechanism} finds it in what the report states"
                 if signal.strength < 90 else f"{signal.mechanism} finds it in the recorded facts")
    also = signal.details.get("also_found_by", [])
    return words + (f"; {', '.join(also)} reach{'es' if len(also) == 1 else ''} the same cause "
                    "from the stated versions" if also else "")


def _why(ranked: List[Signal], i: int) -> str:
    me = ranked[i]
    if i == 0:
        text = "most likely: " + _how(me)
        if len(ranked) > 1:
            text += (f" — more directly than the next ({ranked[1].category.value})"
                     if score(ranked[1]) < score(me) else
                     " — as directly as the next, whose evidence comes later in the report")
        return text
    above = ranked[i - 1]
    if score(above) > score(me):
        return f"less likely than the above: {_how(me)}"
    return f"as likely as the above by its evidence ({_how(me)}), which comes later in the report"


def rank(signals: List[Signal]) -> List[Diagnosed]:
    ranked = sorted(signals, key=_key)
    out = []
    for i, signal in enumerate(ranked):
        severity = signal.severity
        message = signal.message
        if severity == Severity.ERROR and not signal.quotes:
            severity = Severity.WARNING  # never an error without a line of the report behind it
            message += " (the report does not show this directly: no line to quote)"
        out.append(Diagnosed(
            severity=severity, category=signal.category, message=message,
            subject=signal.mechanism,
            evidence={"quoted": [str(q) for q in signal.quotes], **signal.details},
            remedies=signal.remedies, rank=i + 1, why_ranked=_why(ranked, i)))
    return out
