"""Markdown: for pasting into an issue or a CI job summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, List

from fadoctor.render.text import STATUS_WORD, headline
from fadoctor.report import Report, Severity

if TYPE_CHECKING:
    from fadoctor.render import RenderOptions


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report, options: RenderOptions) -> str:
    env = report.environment
    out: List[str] = [f"## fadoctor: {headline(report)}", ""]
    for key, value in (("Python", env.python), ("Platform", env.platform), ("torch", env.torch),
                       ("Driver", env.driver), ("GPUs", ", ".join(env.gpus) or "none"),
                       ("flash-attention", ", ".join(env.flash_attention) or "none")):
        out.append(f"- **{key}**: {_cell(value or 'unknown')}")
    out += ["", "| Check | Status | Result |", "| --- | --- | --- |"]
    for check in report.checks:
        if check.skipped_reason:
            result = check.skipped_reason
        else:
            shown = [f for f in check.findings
                     if options.verbose or f.severity != Severity.INFO] or check.findings[:1]
            result = "<br>".join(f.message for f in shown)
        out.append(f"| {check.id} {check.name} | {STATUS_WORD[check.status]} | {_cell(result)} |")
    fixes = [(c, f) for c in report.checks for f in c.findings if f.remedies
             and f.severity != Severity.INFO]
    if fixes:
        out += ["", "### Remedies", ""]
        for check, finding in fixes:
            out.append(f"**{check.id}** {_cell(finding.message)}")
            out.append("")
            for remedy in finding.remedies:
                out.append(f"- {remedy.summary}")
                if remedy.commands or remedy.code:
                    body = "\n".join(remedy.commands) or remedy.code or ""
                    out += ["", "  ```", *("  " + ln for ln in body.splitlines()), "  ```"]
            out.append("")
    return "\n".join(out).rstrip() + "\n"
