"""Split the real reports of tests/fixtures/reports into development and held-out halves by a
fixed hash of each one's source URL (sha256, first hex digit even: development), written to
tests/fixtures/reports/SPLIT.yaml before any report is run through triage. A report whose
expect.yaml names a `group` (a later batch collected unseen, e.g. held_out_2) goes to that group
whole instead: such a batch is held out from tuning in its entirety."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Dict, List

import yaml

REPORTS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "reports"


def half(url: str) -> str:
    """'development' or 'held_out', from the URL alone."""
    return "development" if int(hashlib.sha256(url.encode()).hexdigest()[0], 16) % 2 == 0 \
        else "held_out"


def split() -> Dict[str, List[str]]:
    halves: Dict[str, List[str]] = {"development": [], "held_out": []}
    for case in sorted(p for p in REPORTS.iterdir() if p.is_dir()):
        expect = yaml.safe_load((case / "expect.yaml").read_text(encoding="utf-8"))
        group = expect.get("group") or half(expect["source"])
        halves.setdefault(group, []).append(case.name)
    return halves


if __name__ == "__main__":
    (REPORTS / "SPLIT.yaml").write_text(yaml.safe_dump(split()), encoding="utf-8")
