"""GitHub Actions workflow commands: one annotation per warning or error finding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fadoctor.report import Report, Severity

if TYPE_CHECKING:
    from fadoctor.render.options import RenderOptions


def _escape(text: str) -> str:
    """A workflow command's message: `%`, CR and LF are its syntax."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property value: also `:` and `,`."""
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Report, options: RenderOptions) -> str:
    lines = []
    for check in report.checks:
        for finding in check.findings:
            if finding.severity == Severity.INFO:
                continue
            level = "error" if finding.severity == Severity.ERROR else "warning"
            body = finding.message
            for remedy in finding.remedies:
                body += f"\nfix: {remedy.summary}" + "".join(f"\n  $ {c}" for c in remedy.commands)
            title = _property(f"{check.id} {check.name}")
            lines.append(f"::{level} title={title}::{_escape(body)}")
    s = report.summary
    lines.append(f"fadoctor: {s.failed} failed, {s.warning} warning, {s.passed} passed, "
                 f"{s.skipped} skipped")
    return "\n".join(lines) + "\n"
