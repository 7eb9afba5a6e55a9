"""JUnit XML: one test case per check, named by its ID, for CI dashboards."""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

from fadoctor.report import Report, Severity, Status

if TYPE_CHECKING:
    from fadoctor.render import RenderOptions


def render_junit(report: Report, options: RenderOptions) -> str:
    suite = ET.Element("testsuite", {
        "name": "fadoctor", "tests": str(len(report.checks)),
        "failures": str(report.summary.failed), "skipped": str(report.summary.skipped),
        "errors": "0",
    })
    for check in report.checks:
        case = ET.SubElement(suite, "testcase", {"classname": "fadoctor", "name": check.id})
        case.set("title", f"{check.name}: {check.title}")
        if check.status == Status.SKIPPED:
            ET.SubElement(case, "skipped", {"message": check.skipped_reason or ""})
            continue
        problems = [f for f in check.findings if f.severity != Severity.INFO]
        if check.status == Status.FAILED:
            errors = [f for f in problems if f.severity == Severity.ERROR]
            node = ET.SubElement(case, "failure", {
                "message": errors[0].message, "type": errors[0].category.value})
            node.text = "\n".join(_lines(f) for f in errors)
        out = "\n".join(_lines(f) for f in check.findings
                        if f.severity != Severity.ERROR or check.status != Status.FAILED)
        if out:
            ET.SubElement(case, "system-out").text = out
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def _lines(finding: object) -> str:
    from fadoctor.report import Finding

    assert isinstance(finding, Finding)
    parts = [f"[{finding.severity.value}] {finding.category.value}: {finding.message}"]
    for remedy in finding.remedies:
        parts.append(f"  fix: {remedy.summary}")
        parts.extend(f"    $ {cmd}" for cmd in remedy.commands)
    return "\n".join(parts)
