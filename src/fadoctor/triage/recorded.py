"""fadoctor's own JSON output pasted back: a facts file (`fadoctor snapshot`) or a report
(`fadoctor check --format json`). Recorded facts are better evidence than any text parse."""

from __future__ import annotations

import json
from typing import List, Optional, Union

from pydantic import ValidationError

from fadoctor.facts.model import Facts
from fadoctor.report import Finding, Report
from fadoctor.triage.text import Pasted, Quote

Recorded = Union[Facts, Report]


def read_recorded(text: Pasted) -> Optional[Recorded]:
    joined = text.joined.strip()
    if not joined.startswith("{") or not joined.endswith("}"):
        return None
    try:
        data = json.loads(joined)
    except (ValueError, RecursionError):  # a deeply nested paste is not fadoctor's output
        return None
    if not isinstance(data, dict):
        return None
    model = Facts if "host" in data and "target" in data else (
        Report if "checks" in data and "summary" in data else None)
    if model is None:
        return None
    try:
        return model.model_validate(data)
    except (ValidationError, RecursionError):
        return None


def quote_lines(text: Pasted, finding: Finding, limit: int = 3) -> List[Quote]:
    """Lines of the text holding the values a finding's evidence names, the most specific
    (longest) values first."""
    needles = sorted({value.strip().lower()[:80] for value in finding.evidence.values()
                      if isinstance(value, str) and len(value.strip()) >= 4}, key=len, reverse=True)
    lines: List[int] = []
    for needle in needles:
        found = text.containing((needle,), first=True)
        if found and found[0] not in lines:
            lines.append(found[0])
        if len(lines) >= limit:
            break
    return [text.quote(index) for index in sorted(lines)]
