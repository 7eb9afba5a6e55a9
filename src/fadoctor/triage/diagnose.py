"""`triage(text, matrix) -> Triage`: parse, build partial facts, run the checks and the error
signatures, merge them and put the most likely cause first, saying why (pure)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Tuple, Union

from fadoctor import __version__
from fadoctor.evaluate import evaluate
from fadoctor.facts.model import Facts
from fadoctor.install.into import (
    NOT_NAMED,
    UNKNOWN,
    finding_into,
    installer_of,
    installer_of_report,
    named_in,
    results_into,
    shell_of,
)
from fadoctor.matrix import Matrix
from fadoctor.report import Category, CheckResult, Environment, Remedy, Report, Severity, Status
from fadoctor.safety.shell import Installer
from fadoctor.triage import mech_build, mech_catalog, mech_prior, mech_toolchain, stated_fix
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.ask_shell import in_shell
from fadoctor.triage.bridge import to_facts, unknown_checks
from fadoctor.triage.context import Context
from fadoctor.triage.environment import read_environment
from fadoctor.triage.errors import read_errors
from fadoctor.triage.gpus import GpuFinder
from fadoctor.triage.mechanisms import MECHANISMS
from fadoctor.triage.model import Diagnosed, Missing, Triage
from fadoctor.triage.observed import Observed
from fadoctor.triage.ranking import rank
from fadoctor.triage.recorded import quote_lines, read_recorded
from fadoctor.triage.signal import IMPLIED, NAMED, Mechanism, Signal, dedupe
from fadoctor.triage.text import Quote, split

SNAPSHOT = "fadoctor snapshot --redact -o -"


def triage(raw: Union[str, bytes], matrix: Matrix) -> Triage:
    text = split(raw)
    seen = Observed()
    ctx = Context(text, seen, matrix)
    recorded = read_recorded(text)
    if recorded is not None:
        return _from_recorded(ctx, recorded)
    read_environment(text, seen, GpuFinder(matrix))
    read_errors(text, seen)
    signals = mech_catalog.fold([s for mechanism in MECHANISMS for s in _run(mechanism, ctx)])
    report = evaluate(to_facts(ctx), matrix)
    checks = _unknown_as_skipped(report.checks, unknown_checks(ctx))
    candidates = _merge(signals, _from_checks(ctx, checks, IMPLIED))
    if not candidates:  # the last resort: what the GPU alone makes likely
        candidates = [s for prior in mech_prior.PRIORS for s in _run(prior, ctx)]
    stated_fix.pin_back(ctx, candidates)
    shell = shell_of(ctx.text.joined, mech_build.on_windows(ctx))
    return _result(ctx, candidates, checks, _environment(ctx),
                   named_in(ctx.text.joined, shell) or replace(UNKNOWN, shell=shell))


def _run(mechanism: Mechanism, ctx: Context) -> List[Signal]:
    try:
        return mechanism(ctx)
    except Exception as exc:  # a bug in one mechanism must not hide the others
        return [Signal("internal", Category.INTERNAL,
                       f"fadoctor's {getattr(mechanism, '__name__', 'mechanism')} failed on this "
                       f"text: {type(exc).__name__}: {exc}", [], 0, severity=Severity.WARNING)]


def _from_recorded(ctx: Context, recorded: Union[Facts, Report]) -> Triage:
    report = evaluate(recorded, ctx.matrix) if isinstance(recorded, Facts) else recorded
    ctx.seen.kinds.add("fadoctor facts" if isinstance(recorded, Facts) else "fadoctor report")
    candidates = _from_checks(ctx, report.checks, NAMED)
    installer = (installer_of(recorded) if isinstance(recorded, Facts)
                 else installer_of_report(report))
    return _result(ctx, candidates, report.checks, report.environment, installer)


def _unknown_as_skipped(checks: Sequence[CheckResult], unknown: Dict[str, str]
                        ) -> List[CheckResult]:
    return [CheckResult(id=c.id, name=c.name, title=c.title, status=Status.SKIPPED,
                        skipped_reason=unknown[c.id]) if c.id in unknown else c for c in checks]


def _from_checks(ctx: Context, checks: Sequence[CheckResult], strength: int) -> List[Signal]:
    """The checks' problems as candidates, each quoting the lines that state what it used."""
    stated = _stated(ctx.seen)
    out = []
    for check in checks:
        for finding in check.findings:
            if finding.severity == Severity.INFO:
                continue
            haystack = (finding.message + " " + json.dumps(finding.evidence, default=str)).lower()
            quotes = [q for value, q in stated if _mentions(value, haystack)] or \
                quote_lines(ctx.text, finding)
            out.append(Signal(check.id, finding.category, finding.message, dedupe(quotes),
                              strength if finding.severity == Severity.ERROR else strength - 25,
                              list(finding.remedies), finding.severity,
                              details={k: v for k, v in finding.evidence.items() if v is not None}))
    return out


def _stated(seen: Observed) -> List[Tuple[str, Quote]]:
    pairs = [(s.value.lower(), s.quote) for s in seen.values.values()]
    pairs += [(f"{name} {s.value}".lower(), s.quote) for name, s in seen.packages.items()]
    pairs += [(g.name.lower(), g.quote) for g in seen.gpus]
    return [(value, quote) for value, quote in pairs if len(value) >= 2]


def _mentions(value: str, haystack: str) -> bool:
    return value in haystack and re.search(
        rf"(?<![\w.]){re.escape(value)}(?![\w])", haystack) is not None


def _merge(signals: List[Signal], from_checks: List[Signal]) -> List[Signal]:
    """A check that reaches a signal's category corroborates it (and lends its remedies);
    wrappers' and generic build messages fold into a named cause when there is one."""
    signals = mech_toolchain.fold(signals)
    for check in from_checks:
        error = str(check.details.get("error") or "")
        reread = next((s for s in signals if error and any(error[:120] in q.text
                                                             for q in s.quotes)), None)
        if reread is not None:  # the same error line, read with less context: not a second cause
            reread.remedies += [rem for rem in check.remedies if _adds(rem, reread.remedies)]
            continue
        same = next((s for s in signals if s.category == check.category), None)
        if same is None:
            signals.append(check)
            continue
        same.details.setdefault("also_found_by", []).append(check.mechanism)
        same.quotes = dedupe([*same.quotes, *check.quotes])
        same.remedies += [rem for rem in check.remedies if _adds(rem, same.remedies)]
    named = [s for s in signals if s.strength >= NAMED - 10 and s.mechanism not in (
        "wrapper", "build_failed") and not s.details.get("corroborates")]
    if named:
        for weak in [s for s in signals if s.mechanism in ("wrapper", "build_failed")]:
            named[0].quotes = dedupe([*named[0].quotes, *weak.quotes])
            signals.remove(weak)
    return signals


def _adds(remedy: Remedy, have: List[Remedy]) -> bool:
    """A check's remedy adds to a signal's when it has commands or code the signal lacks."""
    commands = {c for h in have for c in h.commands}
    codes = {h.code for h in have if h.code}
    return bool((remedy.commands and not set(remedy.commands) <= commands)
                or (remedy.code and remedy.code not in codes))


def _result(ctx: Context, candidates: List[Signal], checks: Sequence[CheckResult],
            environment: Environment, installer: Installer) -> Triage:
    """The ranked diagnosis; every remedy runs the interpreter the report names, or says
    `python -m pip` and which environment to run it in."""
    for candidate in candidates:
        candidate.remedies = r.for_report(ctx, candidate.message, candidate.remedies)
    diagnosis = [finding_into(d, installer) for d in rank(candidates)]
    assumed = [*ctx.assumptions, *([] if installer.known else [NOT_NAMED])]
    return Triage(fadoctor_version=__version__, read=sorted(ctx.seen.kinds),
                  environment=environment, assumed=list(dict.fromkeys(assumed)),
                  diagnosis=diagnosis, missing=_missing(ctx, candidates, diagnosis, installer.shell),
                  checks=results_into(checks, installer))


def _missing(ctx: Context, signals: List[Signal], diagnosis: List[Diagnosed],
             shell: str) -> List[Missing]:
    wanted: List[Tuple[str, str]] = []
    for signal in sorted(signals, key=lambda s: -s.strength):
        wanted += signal.needs
    if not any(d.severity == Severity.ERROR for d in diagnosis):
        if not ctx.seen.raised:
            wanted.append(("the error itself: the whole traceback or build log",
                           'python -c "import torch, flash_attn" 2>&1 | tail -n 40'))
        if ctx.torch is None:
            wanted.append(("the torch version, its CUDA build and the GPUs",
                           "python -m torch.utils.collect_env"))
        if ctx.fa2 is None and not ctx.seen.packages:
            wanted.append(("the flash-attention packages installed",
                           "python -m pip list 2>/dev/null | grep -i -E 'flash|torch|transformers'"))
        if ctx.gpu is None and not ctx.amd:
            wanted.append(("the GPU model and compute capability", r.REVEAL_GPU))
    wanted.append(("everything fadoctor checks, gathered on the machine itself (then "
                   "`fadoctor check --facts` or `fadoctor triage` reads it)", SNAPSHOT))
    out, commands = [], set()
    for what, posix in wanted:
        command = in_shell(posix, shell)
        if command is not None and command not in commands:
            commands.add(command)
            out.append(Missing(what=what, command=command))
    return out


def _environment(ctx: Context) -> Environment:
    seen = ctx.seen
    platform = " ".join(v for v in (seen.get(o.OS), seen.get(o.MACHINE)) if v) or None
    if platform and ctx.glibc:
        platform += f", glibc {ctx.glibc}"
    torch: Optional[str] = None
    if ctx.torch is not None:
        cuda = seen.get(o.TORCH_CUDA)
        torch = f"{ctx.torch}" + (f" (CUDA {cuda})" if cuda and cuda != "none" else "")
    driver = seen.get(o.DRIVER)
    gpus = [f"{g.name} (sm_{g.cc.replace('.', '')})" if g.cc else g.name for g in seen.gpus]
    fa = [f"{name} {s.value}" for name, s in seen.packages.items()
          if name.startswith(("flash-attn", "vllm-flash-attn"))]
    return Environment(python=seen.get(o.PYTHON), platform=platform, torch=torch,
                       driver=f"{driver}" + (f" (CUDA {seen.get(o.DRIVER_CUDA)})"
                                             if seen.get(o.DRIVER_CUDA) else "") if driver else None,
                       gpus=gpus, flash_attention=fa)


__all__ = ["MECHANISMS", "triage"]
