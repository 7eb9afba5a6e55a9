"""The triage JSON's checked-in schema (schemas/triage.schema.json) is current, and the JSON of
every case keeps to it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.render.test_schema import schema_text, violations

from fadoctor.matrix import Matrix
from fadoctor.triage.diagnose import triage
from fadoctor.triage.model import Triage
from fadoctor.triage.render import render_json

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "triage.schema.json"
CASES = sorted(ROOT.glob("tests/fixtures/*/*/report.txt"))


def test_checked_in_schema_is_current() -> None:
    text = schema_text(Triage)
    if os.environ.get("FADOCTOR_UPDATE_GOLDEN") == "1":
        SCHEMA.write_text(text, encoding="utf-8")
    assert SCHEMA.read_text(encoding="utf-8") == text, (
        "schemas/triage.schema.json differs: run with FADOCTOR_UPDATE_GOLDEN=1 and review")


@pytest.mark.parametrize("report", CASES, ids=[p.parent.name for p in CASES])
def test_json_keeps_to_the_schema(report: Path, matrix: Matrix) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    output = json.loads(render_json(triage(report.read_bytes(), matrix)))
    assert violations(output, schema, schema.get("$defs", {})) == []
