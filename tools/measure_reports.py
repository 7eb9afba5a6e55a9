"""Run triage over the real reports of tests/fixtures/reports and print, per half of SPLIT.yaml,
how many get the confirmed cause as the top finding with the fix in that finding's own remedy;
every miss is listed with what went wrong."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List

import yaml

from fadoctor.matrix import load_matrix
from fadoctor.triage.diagnose import triage

REPORTS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "reports"


def problems(case: Path, matrix: Any) -> List[str]:
    """What is wrong with triage's answer for one report (empty: right)."""
    expect: Dict[str, Any] = yaml.safe_load((case / "expect.yaml").read_text(encoding="utf-8"))
    result = triage((case / "report.txt").read_bytes(), matrix)
    if not result.diagnosis:
        return ["no diagnosis"]
    top = result.diagnosis[0]
    found: List[str] = []
    accepted = [expect["category"], *expect.get("also_acceptable", [])]
    if top.category.value not in accepted:
        found.append(f"top {top.category.value}, expected {accepted}")
    remedy = " ".join(f"{r.summary} {' '.join(r.commands)} {r.code or ''}"
                      for r in top.remedies).lower()
    if not any(token.lower() in remedy for token in expect["remedy_any_of"]):
        found.append(f"top remedy lacks all of {expect['remedy_any_of']}")
    return found


def main(halves: List[str]) -> None:
    split = yaml.safe_load((REPORTS / "SPLIT.yaml").read_text(encoding="utf-8"))
    matrix = load_matrix(None)
    for name in halves:
        misses = {case: problems(REPORTS / case, matrix) for case in split[name]}
        wrong = {case: why for case, why in misses.items() if why}
        right = len(misses) - len(wrong)
        print(f"{name}: {right}/{len(misses)} = {100 * right / len(misses):.0f}%")
        for case, why in wrong.items():
            print(f"  miss {case}: {'; '.join(why)}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["development"])
