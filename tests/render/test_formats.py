"""Every format has a renderer, and each output keeps its format's contract on every fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, List
from xml.etree import ElementTree as ET

import pytest

from fadoctor.evaluate import evaluate
from fadoctor.facts.model import Facts
from fadoctor.formats import Format
from fadoctor.matrix import load_matrix
from fadoctor.render.dispatch import RENDERERS, render
from fadoctor.render.options import RenderOptions
from fadoctor.report import Report, Severity, Status

FACTS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "facts"
NAMES = sorted(p.stem for p in FACTS_DIR.glob("*.json"))
ReportOf = Callable[[str], Report]


def problems(report: Report) -> List[tuple]:
    return [(check.id, f) for check in report.checks for f in check.findings
            if f.severity != Severity.INFO]


def test_every_format_has_a_renderer() -> None:
    assert set(RENDERERS) == set(Format)


@pytest.mark.parametrize("fmt", list(Format))
@pytest.mark.parametrize("name", NAMES)
def test_every_format_renders_every_fixture(name: str, fmt: Format, report_of: ReportOf) -> None:
    for verbose in (False, True):
        out = render(report_of(name), fmt, RenderOptions(verbose=verbose))
        assert out.strip() and out.endswith("\n")


@pytest.mark.parametrize("name", NAMES)
def test_junit_has_one_testcase_per_check(name: str, report_of: ReportOf) -> None:
    report = report_of(name)
    suite = ET.fromstring(render(report, Format.JUNIT))
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [c.id for c in report.checks]
    assert suite.get("tests") == str(len(report.checks))
    assert suite.get("failures") == str(report.summary.failed)
    assert suite.get("skipped") == str(report.summary.skipped)
    assert suite.get("errors") == "0"  # no check crashed
    for case, check in zip(cases, report.checks):
        failure, skipped = case.find("failure"), case.find("skipped")
        assert (failure is not None) == (check.status == Status.FAILED), check.id
        assert (skipped is not None) == (check.status == Status.SKIPPED), check.id
        if failure is not None:
            errors = [f for f in check.findings if f.severity == Severity.ERROR]
            assert failure.get("type") == errors[0].category.value
        if skipped is not None:
            assert skipped.get("message") == check.skipped_reason


@pytest.mark.parametrize("name", NAMES)
def test_github_annotates_each_problem(name: str, report_of: ReportOf) -> None:
    report = report_of(name)
    lines = render(report, Format.GITHUB).splitlines()
    annotations = [ln for ln in lines if ln.startswith("::")]
    expected = problems(report)
    assert len(annotations) == len(expected)
    for line, (check_id, finding) in zip(annotations, expected):
        level = "error" if finding.severity == Severity.ERROR else "warning"
        assert line.startswith(f"::{level} title={check_id} ")
    s = report.summary
    assert lines == annotations + [f"fadoctor: {s.failed} failed, {s.warning} warning, "
                                   f"{s.passed} passed, {s.skipped} skipped"]


def test_github_without_problems_prints_only_the_summary(report_of: ReportOf) -> None:
    facts = Facts.model_validate_json(
        (FACTS_DIR / "h100-torch211-cu130-no-fa.json").read_text(encoding="utf-8"))
    report = evaluate(facts, load_matrix(), ignore={"FAD110"})
    assert not problems(report)
    lines = render(report, Format.GITHUB).splitlines()
    assert len(lines) == 1 and lines[0].startswith("fadoctor: 0 failed, 0 warning")


@pytest.mark.parametrize("name", NAMES)
def test_json_is_the_report_model(name: str, report_of: ReportOf) -> None:
    report = report_of(name)
    data = json.loads(render(report, Format.JSON))
    assert data == report.model_dump(mode="json")
    assert Report.model_validate(data) == report


@pytest.mark.parametrize("name", NAMES)
def test_markdown_has_a_row_per_check(name: str, report_of: ReportOf) -> None:
    report = report_of(name)
    rows = [ln for ln in render(report, Format.MARKDOWN).splitlines() if ln.startswith("| FAD")]
    assert [r.split()[1] for r in rows] == [c.id for c in report.checks]


def test_colour_only_when_asked(report_of: ReportOf) -> None:
    report = report_of("rtx5090-torch-cu126")
    assert "\x1b[" not in render(report, Format.TEXT, RenderOptions(color=False))
    assert "\x1b[" in render(report, Format.TEXT, RenderOptions(color=True))


def test_verbose_text_shows_evidence(report_of: ReportOf) -> None:
    report = report_of("rtx5090-torch-cu126")
    quiet = render(report, Format.TEXT, RenderOptions())
    loud = render(report, Format.TEXT, RenderOptions(verbose=True))
    assert "compute_capability: 12.0" in loud and "compute_capability" not in quiet


def test_junit_reports_a_check_that_crashed_as_an_error(report_of: ReportOf) -> None:
    """A check that raises is a test that could not run (<error>), not a failed one (<failure>)."""
    from fadoctor.checks.base import Check
    from fadoctor.evaluate import run_check, summarize

    def broken(facts: Facts, matrix: object) -> List[object]:
        raise KeyError("torch")

    report = report_of("t4-fa2-installed")
    facts = Facts.model_validate_json((FACTS_DIR / "t4-fa2-installed.json").read_text())
    crashed = run_check(Check("FAD999", "broken", "a check with a bug", "", broken), facts,
                        load_matrix())
    checks = [*report.checks, crashed]
    report = report.model_copy(update={"checks": checks, "summary": summarize(checks)})
    suite = ET.fromstring(render(report, Format.JUNIT))
    assert suite.get("errors") == "1"
    assert suite.get("failures") == str(report.summary.failed - 1)
    case = suite.findall("testcase")[-1]
    assert case.get("name") == "FAD999" and case.find("failure") is None
    error = case.find("error")
    assert error is not None and error.get("type") == "internal"
    assert "the check itself failed: KeyError" in (error.get("message") or "")
