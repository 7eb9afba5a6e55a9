"""JUnit XML: one test case per check, named by its ID, for CI dashboards."""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from fadoctor.report import Category, CheckResult, Report, Severity, Status

if TYPE_CHECKING:
    from fadoctor.render.options import RenderOptions


def render_junit(report: Report, options: RenderOptions) -> str:
    crashed = sum(1 for check in report.checks if _crashed(check))
    suite = ET.Element("testsuite", {
        "name": "fadoctor", "tests": str(len(report.checks)),
        "failures": str(report.summary.failed - crashed), "skipped": str(report.summary.skipped),
        "errors": str(crashed),
    })
    props = ET.SubElement(suite, "properties")
    for name, value in (("fadoctor_version", report.fadoctor_version),
                        ("matrix_date", report.matrix_date or "unknown")):
        ET.SubElement(props, "property", {"name": name, "value": value})
    for check in report.checks:
        case = ET.SubElement(suite, "testcase", {"classname": "fadoctor", "name": check.id})
        case.set("title", f"{check.name}: {check.title}")
        if check.status == Status.SKIPPED:
            ET.SubElement(case, "skipped", {"message": check.skipped_reason or ""})
            continue
        if check.status == Status.FAILED:
            errors = [f for f in check.findings if f.severity == Severity.ERROR]
            # JUnit's <error> is a test that could not run to a verdict: here, a check that crashed.
            node = ET.SubElement(case, "error" if _crashed(check) else "failure", {
                "message": errors[0].message, "type": errors[0].category.value})
            node.text = "\n".join(_lines(f) for f in errors)
        out = "\n".join(_lines(f) for f in check.findings
                        if f.severity != Severity.ERROR or check.status != Status.FAILED)
        if out:
            ET.SubElement(case, "system-out").text = out
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def _crashed(check: CheckResult) -> bool:
    """The check raised instead of returning a verdict (evaluate turns that into this finding)."""
    return any(f.category == Category.INTERNAL and f.severity == Severity.ERROR
               for f in check.findings)


def _lines(finding: object) -> str:
    from fadoctor.report import Finding

    assert isinstance(finding, Finding)
    parts = [f"[{finding.severity.value}] {finding.category.value}: {finding.message}"]
    for remedy in finding.remedies:
        parts.append(f"  fix: {remedy.summary}")
        parts.extend(f"    $ {cmd}" for cmd in remedy.commands)
    return "\n".join(parts)
