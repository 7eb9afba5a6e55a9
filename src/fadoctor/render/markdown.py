"""Markdown: for pasting into an issue or a CI job summary."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, List

from fadoctor.render.text import STATUS_WORD, headline
from fadoctor.report import Report, Severity

if TYPE_CHECKING:
    from fadoctor.render.options import RenderOptions


def _text(text: str) -> str:
    """Prose as Markdown that stays prose: no HTML (so no `</details>`), links, images or code
    spans can come from the text."""
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    return re.sub(r"([\\`\[\]])", r"\\\1", text)


def _cell(text: str) -> str:
    return _text(text).replace("|", "\\|").replace("\n", " ")


def _fence(body: str) -> List[str]:
    """A fenced block longer than any run of backquotes inside it."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return ["", f"  {fence}", *("  " + ln for ln in body.splitlines()), f"  {fence}"]


def render_markdown(report: Report, options: RenderOptions) -> str:
    env = report.environment
    out: List[str] = [f"## fadoctor: {headline(report)}", ""]
    for key, value in (("Python", env.python), ("Platform", env.platform), ("torch", env.torch),
                       ("Driver", env.driver), ("GPUs", ", ".join(env.gpus) or "none"),
                       ("flash-attention", ", ".join(env.flash_attention) or "none"),
                       ("fadoctor data", f"fadoctor {report.fadoctor_version}, matrix of "
                                         f"{report.matrix_date or 'unknown date'}")):
        out.append(f"- **{key}**: {_cell(value or 'unknown')}")
    out += ["", "| Check | Status | Result |", "| --- | --- | --- |"]
    for check in report.checks:
        if check.skipped_reason:
            result = _cell(check.skipped_reason)
        else:
            shown = [f for f in check.findings
                     if options.verbose or f.severity != Severity.INFO] or check.findings[:1]
            result = "<br>".join(_cell(f.message) for f in shown)
        out.append(f"| {check.id} {check.name} | {STATUS_WORD[check.status]} | {result} |")
    fixes = [(c, f) for c in report.checks for f in c.findings if f.remedies
             and f.severity != Severity.INFO]
    if fixes:
        out += ["", "### Remedies", ""]
        for check, finding in fixes:
            out.append(f"**{check.id}** {_cell(finding.message)}")
            out.append("")
            for remedy in finding.remedies:
                out.append(f"- {_cell(remedy.summary)}")
                if remedy.commands or remedy.code:
                    out += _fence("\n".join(remedy.commands) or remedy.code or "")
            out.append("")
    return "\n".join(out).rstrip() + "\n"
