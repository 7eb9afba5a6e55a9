"""Facts fixtures named after real failures: each must produce the finding its case expects."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List

import pytest
import yaml

from fadoctor.checks import BY_KEY
from fadoctor.evaluate import evaluate
from fadoctor.facts.model import Facts
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Report, Severity

FACTS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "facts"
EXPECT: Dict[str, Dict[str, Any]] = yaml.safe_load(
    (FACTS_DIR / "expect.yaml").read_text(encoding="utf-8"))


def load(name: str) -> Facts:
    return Facts.model_validate_json((FACTS_DIR / f"{name}.json").read_text(encoding="utf-8"))


def remedy_text(finding: Finding) -> str:
    return "\n".join([r.summary for r in finding.remedies]
                     + [c for r in finding.remedies for c in r.commands]).lower()


def describe(report: Report, check_id: str) -> str:
    result = next(c for c in report.checks if c.id == check_id)
    if result.skipped_reason:
        return f"{check_id} skipped: {result.skipped_reason}"
    lines = [f"{check_id} {result.status.value}:"]
    for f in result.findings:
        lines.append(f"  [{f.severity.value}] {f.category.value}: {f.message}")
        lines.extend(f"    fix: {r.summary} {r.commands}" for r in f.remedies)
    return "\n".join(lines)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_fixture_produces_the_expected_finding(name: str, matrix: Matrix) -> None:
    want = EXPECT[name]
    report = evaluate(load(name), matrix)
    result = next(c for c in report.checks if c.id == want["check"])
    found = [f for f in result.findings if f.category.value == want["category"]
             and f.severity.value == want["severity"]]
    assert found, (f"{name}: expected [{want['severity']}] {want['category']} from "
                   f"{want['check']}, got\n{describe(report, want['check'])}")
    tokens: List[str] = [t.lower() for t in want.get("remedy_any_of", [])]
    if tokens:
        texts = [remedy_text(f) for f in found]
        assert any(t in text for t in tokens for text in texts), (
            f"{name}: no remedy mentions any of {tokens}:\n{describe(report, want['check'])}")


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_no_check_crashes_on_a_fixture(name: str, matrix: Matrix) -> None:
    report = evaluate(load(name), matrix)
    crashed = [f.message for f in report.findings() if f.category == Category.INTERNAL
               and f.severity == Severity.ERROR]
    assert crashed == []


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_every_finding_carries_evidence_or_is_info(name: str, matrix: Matrix) -> None:
    report = evaluate(load(name), matrix)
    bare = [f.message for f in report.findings() if f.severity != Severity.INFO
            and not f.evidence]
    assert bare == []


def test_expectations_use_the_project_vocabulary() -> None:
    for name, want in EXPECT.items():
        assert want["check"] in BY_KEY, name
        assert Category(want["category"]), name
        assert Severity(want["severity"]), name
        if "case" in want:  # copied from a case: its tokens are the case's, never empty
            assert want["remedy_any_of"], name


def test_index_generator_and_files_agree(generator: ModuleType) -> None:
    on_disk = {p.stem for p in FACTS_DIR.glob("*.json")}
    assert set(generator.FIXTURES) == on_disk == set(EXPECT)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_checked_in_json_is_what_the_generator_writes(name: str, generator: ModuleType) -> None:
    expected = generator.render(generator.FIXTURES[name]())
    actual = (FACTS_DIR / f"{name}.json").read_text(encoding="utf-8")
    assert actual == expected, "regenerate: python tests/fixtures/make_facts.py"


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_fixtures_round_trip_and_pin_the_version(name: str, build: ModuleType) -> None:
    facts = load(name)
    assert facts.fadoctor_version == build.FIXTURE_VERSION
    assert Facts.model_validate_json(facts.model_dump_json()) == facts
