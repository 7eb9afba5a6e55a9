"""FAD141: torch.compile(fullgraph=True) compiles the attention call of each working target."""

from __future__ import annotations

from typing import List, Optional

from fadoctor.checks.base import Outcome, Skip, info, version
from fadoctor.checks.kernels import target_name
from fadoctor.checks.remedies import sdpa_fallback
from fadoctor.facts.kernels import CompileTarget
from fadoctor.facts.model import Facts, Family
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity
from fadoctor.safety.shell import command, requirement
from fadoctor.snippets import dynamo_disable_code, snippet


def check_compile(facts: Facts, matrix: Matrix) -> Outcome:
    run = facts.compile
    if run is None:
        return Skip("torch.compile was not probed (check --compile runs it)")
    if run.skipped:
        return Skip(f"needs a GPU to compile for: {run.skipped}")
    findings: List[Finding] = []
    for target, probe in run.targets.items():
        name = target_name(facts, matrix, target)
        if probe.data is None:
            assert probe.failure is not None
            findings.append(Finding(
                severity=Severity.WARNING, category=Category.COMPILE_GRAPH_BREAK,
                message=f"{name}: the torch.compile probe did not finish: {probe.failure.reason}",
                subject=target, evidence=probe.failure.model_dump(),
                remedies=_remedies(facts, matrix, target)))
            continue
        data = probe.data
        if data.installed is False or data.import_error is not None:
            continue
        findings.append(_finding(facts, matrix, target, name, data))
    if not findings:
        return Skip("no target to compile")
    return findings


def _ops_text(data: CompileTarget) -> str:
    if data.custom_ops is None:
        return ""
    if not data.custom_ops:
        return "; no flash-attention custom ops are registered"
    return f"; custom ops: {', '.join(data.custom_ops)}"


def _finding(facts: Facts, matrix: Matrix, target: str, name: str, data: CompileTarget
             ) -> Finding:
    if data.skipped is not None or data.fullgraph is None:
        return info(f"{name}: not compiled ({data.skipped or 'no result'})")
    full, explain = data.fullgraph, data.explain
    breaks = explain.graph_break_count if explain is not None else None
    evidence = data.model_dump()
    if full.ok and full.correct is not False:
        return info(f"{name}: torch.compile(fullgraph=True) compiles and runs forward+backward "
                    f"({full.backend}, {full.seconds or 0:.1f} s){_ops_text(data)}", **evidence)
    if full.ok:
        return Finding(severity=Severity.ERROR, category=Category.NUMERICS, subject=target,
                       message=f"{name}: the compiled module's output differs from the reference",
                       evidence=evidence, remedies=_remedies(facts, matrix, target))
    error = full.error
    reasons = "; ".join(explain.break_reasons[:3]) if explain is not None else ""
    text = (error.message.splitlines()[0] if error is not None and error.message else "failed")
    return Finding(
        severity=Severity.WARNING, category=Category.COMPILE_GRAPH_BREAK, subject=target,
        message=f"{name}: torch.compile(fullgraph=True) fails: "
                f"{error.exception_type if error else ''}: {text}"
                + (f" ({breaks} graph break(s): {reasons})" if breaks else "") + _ops_text(data),
        evidence=evidence, remedies=_remedies(facts, matrix, target))


def _custom_ops_remedy(facts: Facts, matrix: Matrix, target: str) -> Optional[Remedy]:
    """flash-attn registers torch.library ops from a release on a torch version (the matrix)."""
    if target != Family.FA2.value:
        return None
    ops = matrix.custom_ops_for(Family.FA2)
    fa = facts.family(Family.FA2)
    torch = facts.torch.data
    if ops is None or fa is None:
        return None
    fv, tv = version(fa.version), version(torch.version if torch else None)
    if fv is not None and fv < ops.since:
        return Remedy(summary=f"flash-attn {ops.since} and later register their kernels as "
                      f"torch.library custom ops ({ops.namespace}::...) on torch >= "
                      f"{ops.min_torch}, which torch.compile traces without a graph break.",
                      commands=[command("pip", "install",
                                        requirement("flash-attn", ops.since, op=">="),
                                        "--no-build-isolation")])
    if tv is not None and tv < ops.min_torch:
        return Remedy(summary=f"flash-attn registers its custom ops only on torch >= "
                      f"{ops.min_torch}; this torch gets plain functions that Dynamo cannot trace.")
    return None


def _remedies(facts: Facts, matrix: Matrix, target: str) -> List[Remedy]:
    remedies: List[Remedy] = []
    ops = _custom_ops_remedy(facts, matrix, target)
    if ops is not None:
        remedies.append(ops)
    if not target.startswith("sdpa"):
        remedies.append(Remedy(summary="Run the flash-attn call eagerly and compile the rest "
                               "(needs fullgraph=False).",
                               code=dynamo_disable_code(target)))
    remedies.append(Remedy(summary="Or let Dynamo fall back to eager where it fails (global and "
                           "blunt: it hides real errors).",
                           code=snippet("dynamo_suppress_errors").code))
    if not target.startswith("sdpa"):
        remedies.append(sdpa_fallback("Or use SDPA, which torch.compile traces."))
    return remedies
