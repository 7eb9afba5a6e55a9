"""The triage result as text, Markdown or JSON (pure)."""

from __future__ import annotations

from typing import List, Optional, Tuple

from fadoctor.render.markdown import _cell, _fence
from fadoctor.report import Severity
from fadoctor.triage.model import Diagnosed, Triage

_MARK = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "-"}


def headline(result: Triage) -> str:
    errors = sum(1 for d in result.diagnosis if d.severity == Severity.ERROR)
    if not result.diagnosis:
        verdict = "no cause found in this text"
    elif len(result.diagnosis) == 1:
        verdict = "1 possible cause"
    else:
        verdict = f"{len(result.diagnosis)} possible causes, most likely first"
    read = ", ".join(result.read) or "nothing recognised"
    shown = f" ({errors} of them errors the quoted lines show)" if errors and len(
        result.diagnosis) > 1 else (" (an error the quoted lines show)" if errors else "")
    return f"{verdict}{shown}; read: {read}"


def _environment(result: Triage) -> List[Tuple[str, Optional[str]]]:
    env = result.environment
    return [("python", env.python), ("platform", env.platform), ("torch", env.torch),
            ("driver", env.driver), ("GPUs", ", ".join(env.gpus) or None),
            ("flash-attn", ", ".join(env.flash_attention) or None)]


def render_text(result: Triage, verbose: bool = False) -> str:
    out = [f"fadoctor triage: {headline(result)}"]
    out += [f"  {key:<11}{value or 'not stated'}" for key, value in _environment(result)]
    out += [f"  {'assumed':<11}{a}" for a in result.assumed]
    for finding in result.diagnosis:
        out += ["", *_finding_text(finding, verbose)]
    if result.missing:
        out += ["", "To confirm or sharpen this, run on the machine and paste the output:"]
        for item in result.missing:
            out += [f"  - {item.what}:", f"      {item.command}"]
    if verbose:
        out += ["", "Checks of `fadoctor check`, on what the text states:"]
        for check in result.checks:
            detail = check.skipped_reason or "; ".join(f.message for f in check.findings[:2])
            out.append(f"  {check.id} {check.status.value:<8} {' '.join(detail.split())}")
    return "\n".join(out) + "\n"


def _finding_text(finding: Diagnosed, verbose: bool) -> List[str]:
    out = [f"{finding.rank}. {_MARK[finding.severity]} {finding.category.value}: {finding.message}",
           f"   why here: {finding.why_ranked}"]
    quoted = finding.evidence.get("quoted") or []
    if quoted:
        out.append("   from the report:")
        out += [f"     {q}" for q in quoted]
    for remedy in finding.remedies:
        out.append(f"   → {remedy.summary}")
        out += [f"       {c}" for c in remedy.commands]
        if remedy.code:
            out += [f"       {ln}" for ln in remedy.code.splitlines()]
        if remedy.link:
            out.append(f"       {remedy.link}")
    if verbose:
        out += [f"   {k}: {v}" for k, v in finding.evidence.items() if k != "quoted" and v]
    return out


def render_markdown(result: Triage, verbose: bool = False) -> str:
    out = [f"## fadoctor triage: {_cell(headline(result))}", ""]
    out += [f"- **{key}**: {_cell(value or 'not stated')}" for key, value in _environment(result)]
    out += [f"- **assumed**: {_cell(a)}" for a in result.assumed]
    for finding in result.diagnosis:
        out += ["", f"### {finding.rank}. {finding.category.value} ({finding.severity.value})", "",
                _cell(finding.message), "", f"*Why here:* {_cell(finding.why_ranked)}", ""]
        quoted = finding.evidence.get("quoted") or []
        if quoted:
            out += ["From the report:", *_fence("\n".join(quoted)), ""]
        for remedy in finding.remedies:
            out.append(f"- {_cell(remedy.summary)}")
            body = "\n".join(remedy.commands) or remedy.code or ""
            if body:
                out += _fence(body)
    if result.missing:
        out += ["", "### To confirm or sharpen this", ""]
        out += [f"- {_cell(m.what)}: `{m.command}`" for m in result.missing]
    return "\n".join(out).rstrip() + "\n"


def render_json(result: Triage, verbose: bool = False) -> str:
    return result.model_dump_json(indent=2) + "\n"


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
