"""The top finding of a pasted report, and everything its remedies say (summaries, commands,
code) as one string: what the triage tests assert on."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.triage.diagnose import triage
from fadoctor.triage.model import Diagnosed


def said(found: Diagnosed) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)} {r.code or ''}" for r in found.remedies)


def top(text: str, matrix: Matrix) -> Diagnosed:
    result = triage(text, matrix)
    assert result.diagnosis, text
    return result.diagnosis[0]
