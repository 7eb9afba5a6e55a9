"""Rich text for a terminal: summary first, one line per check, remedies as copyable commands."""

from __future__ import annotations

import io
import json
import textwrap
from typing import TYPE_CHECKING, Dict, List

from rich.console import Console
from rich.text import Text

from fadoctor.report import CheckResult, Finding, Report, Severity, Status

if TYPE_CHECKING:
    from fadoctor.render.options import RenderOptions

STATUS_WORD: Dict[Status, str] = {
    Status.PASSED: "passed", Status.WARNING: "warning", Status.FAILED: "failed",
    Status.SKIPPED: "skipped",
}
_MARK = {Status.PASSED: ("✓", "green"), Status.WARNING: ("!", "yellow"),
         Status.FAILED: ("✗", "bold red"), Status.SKIPPED: ("-", "dim")}
_SEVERITY_STYLE = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "dim"}
WRAP_WIDTHS = (60, 120)  # the narrowest and widest a wrapped report is drawn at


def headline(report: Report) -> str:
    s = report.summary
    if s.failed:
        verdict = "problems found"
    elif s.warning:
        verdict = "usable, with warnings"
    else:
        verdict = "no problems found"
    counts = ", ".join(f"{n} {word}" for n, word in ((s.failed, "failed"), (s.warning, "warning"),
                                                     (s.passed, "passed"), (s.skipped, "skipped"))
                       if n)
    return f"{verdict} ({counts})"


def _line(text: str) -> str:
    """One line, whatever the text holds: what the examined environment wrote cannot start a
    line of its own in a log (where `::command::` lines mean something to CI runners)."""
    return " ".join(text.split())


def render_text(report: Report, options: RenderOptions) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=options.width, color_system="standard" if options.color
                      else None, force_terminal=options.color, highlight=False, soft_wrap=True,
                      emoji=False)
    style = "bold red" if report.summary.failed else ("yellow" if report.summary.warning
                                                      else "green")
    console.print(Text.assemble(("fadoctor: ", "bold"), (headline(report), style)))
    _environment(console, report)
    console.print()
    for check in report.checks:
        _check(console, check, options)
    return buffer.getvalue()


def _print(console: Console, head: Text, body: str, options: RenderOptions, style: str = "",
           indent: int = 6) -> None:
    """`head` then `body` (one line of prose): whole, or wrapped at word boundaries with the
    continuation lines indented under the body when that leaves 40 columns, else by `indent`."""
    body = _line(body)
    if not options.wrap:
        console.print(Text.assemble(head, (body, style)), soft_wrap=True)
        return
    width = min(max(options.width, WRAP_WIDTHS[0]), WRAP_WIDTHS[1])
    start = len(head.plain)
    hang = start if width - start >= 40 else indent
    lines = textwrap.wrap(body, width=width, initial_indent=" " * start,
                          subsequent_indent=" " * hang, break_long_words=False,
                          break_on_hyphens=False) or [" " * start]
    console.print(Text.assemble(head, (lines[0][start:], style)), soft_wrap=True)
    for line in lines[1:]:
        console.print(Text(line, style=style), soft_wrap=True)


def _environment(console: Console, report: Report) -> None:
    env = report.environment
    rows = [("python", env.python), ("platform", env.platform), ("torch", env.torch),
            ("driver", env.driver), ("GPUs", ", ".join(env.gpus) or "none"),
            ("flash-attn", ", ".join(env.flash_attention) or "none"),
            ("data", f"fadoctor {report.fadoctor_version}, matrix of "
                     f"{report.matrix_date or 'unknown date'}")]
    for key, value in rows:
        line = Text(f"  {key:<11}", style="dim")
        line.append(_line(value or "unknown"))
        console.print(line)


def _check(console: Console, check: CheckResult, options: RenderOptions) -> None:
    mark, style = _MARK[check.status]
    line = Text.assemble((f"{mark} ", style), (f"{check.id} ", "bold"), (f"{check.name:<24}", ""))
    if check.status == Status.SKIPPED:
        _print(console, line, f"skipped: {check.skipped_reason or ''}", options, "dim")
        return
    # Problems, and hints (info that comes with a remedy), show without -v.
    problems = [f for f in check.findings if f.severity != Severity.INFO or f.remedies]
    if problems:
        _print(console, line, check.title, options, "dim")
        for finding in problems:
            _finding(console, finding, options)
        return
    summary = check.findings[0].message if len(check.findings) == 1 else check.title
    _print(console, line, summary, options)
    if options.verbose and len(check.findings) == 1:  # its message is the summary line
        _evidence_lines(console, check.findings[0], options)
    elif options.verbose:
        for finding in check.findings:
            _finding(console, finding, options)


def _finding(console: Console, finding: Finding, options: RenderOptions) -> None:
    _print(console, Text("    "), finding.message, options, _SEVERITY_STYLE[finding.severity])
    for remedy in finding.remedies:
        _print(console, Text("    → "), remedy.summary, options)
        for command in remedy.commands:
            console.print(Text(f"        {command}", style="bold cyan"), soft_wrap=True)
        if remedy.code:
            for code_line in remedy.code.splitlines():
                console.print(Text(f"        {code_line}", style="cyan"), soft_wrap=True)
        if remedy.link:
            console.print(Text(f"      {remedy.link}", style="blue"), soft_wrap=True)
    if options.verbose:
        _evidence_lines(console, finding, options)


def _evidence_lines(console: Console, finding: Finding, options: RenderOptions) -> None:
    for key, value in _evidence(finding):
        _print(console, Text(f"      {key}: ", style="dim"), value, options, "dim", indent=8)


def _evidence(finding: Finding) -> List[tuple[str, str]]:
    out = []
    for key, value in finding.evidence.items():
        if value is None or value == [] or value == {}:
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        if "\n" in text:
            text = " | ".join(ln for ln in text.splitlines() if ln.strip())[-600:]
        out.append((key, text))
    return out
