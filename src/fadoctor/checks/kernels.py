"""FAD140: each installed flash-attention family and each SDPA backend computes correct attention.

Reads the smoke tests' facts: every case forward and backward against the fp32 reference, a
crash or hang of a target's stage, the GPU's load before the cases ran.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from fadoctor.checks.base import Outcome, Skip, info
from fadoctor.checks.flash import label as family_label
from fadoctor.checks.kernel_remedies import (
    SDPA_NAMES,
    KernelError,
    busy_remedy,
    classify_error,
    family_remedies,
    sdpa_remedies,
)
from fadoctor.facts.kernels import CaseResult, GpuState, SmokeTarget
from fadoctor.facts.model import Facts, Family, Probe
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity

FAILED = ("wrong", "nonfinite", "error")
SHOWN = 3  # failing cases named in a message; the evidence lists them all


def target_name(facts: Facts, matrix: Matrix, target: str) -> str:
    if target in SDPA_NAMES:
        return SDPA_NAMES[target]
    fa = facts.family(Family(target))
    return family_label(fa, matrix) if fa is not None else target


def tested(facts: Facts) -> Dict[str, Probe[SmokeTarget]]:
    """The targets there was something to test: SDPA, and the families that are installed and
    import (an import failure is FAD111's finding)."""
    assert facts.smoke is not None
    return {t: p for t, p in facts.smoke.targets.items()
            if p.data is None or (p.data.installed is not False and p.data.import_error is None)}


def passed_targets(facts: Facts) -> List[str]:
    return [t for t, p in tested(facts).items()
            if p.data is not None and p.data.cases
            and all(c.status in ("passed", "not_applicable") for c in p.data.cases)
            and any(c.status == "passed" for c in p.data.cases)]


def check_smoke(facts: Facts, matrix: Matrix) -> Outcome:
    run = facts.smoke
    if run is None:
        return Skip("check --static imports nothing: no kernel ran" if facts.mode == "static"
                    else "the kernel smoke tests were not run (check --kernels none, or facts "
                    "from an earlier fadoctor)")
    if run.skipped:
        return Skip(f"needs a GPU to run kernels on: {run.skipped}")
    targets = tested(facts)
    reasons = {p.data.skipped for p in targets.values() if p.data is not None and not p.data.cases}
    if targets and all(p.data is not None and not p.data.cases for p in targets.values()) \
            and len(reasons) == 1:
        return Skip(f"needs a GPU that torch can use: {reasons.pop()}")
    passed = passed_targets(facts)
    findings = _busy(targets)
    for target, probe in targets.items():
        findings += _target(facts, matrix, target, probe, passed)
    return findings + [_summary(facts, matrix, targets, run.grid or "default")]


def _busy(targets: Dict[str, Probe[SmokeTarget]]) -> List[Finding]:
    """One warning per GPU on which cases shrank, were skipped or ran out of memory."""
    out: Dict[int, Finding] = {}
    for probe in targets.values():
        data = probe.data
        if data is None or data.gpu is None or data.gpu.index in out:
            continue
        oom = any(c.oom for c in data.cases)
        if data.gpu.busy is None and data.shrunk == 1 and not oom:
            continue
        out[data.gpu.index] = _busy_finding(data.gpu, data.shrunk, oom)
    return list(out.values())


def _busy_finding(gpu: GpuState, shrunk: int, oom: bool) -> Finding:
    what = ("no case fit in its free memory, so the kernels were not tested" if shrunk == 0
            else f"the cases ran with sequences {shrunk}x shorter to fit" if shrunk > 1
            else "a case ran out of memory and was skipped" if oom
            else "the kernels were tested anyway; timings taken now are not representative")
    return Finding(severity=Severity.WARNING, category=Category.GPU_BUSY,
                   message=f"GPU {gpu.index} is shared ({gpu.busy or 'short of free memory'}; "
                   f"{gpu.free_mib} of {gpu.total_mib} MiB free): {what}",
                   subject=f"GPU {gpu.index}", evidence=gpu.model_dump(), remedies=[busy_remedy()])


def _target(facts: Facts, matrix: Matrix, target: str, probe: Probe[SmokeTarget],
            passed: List[str]) -> List[Finding]:
    name = target_name(facts, matrix, target)
    if probe.data is None:
        return [_crashed(facts, matrix, target, name, probe, passed)]
    data = probe.data
    failing = [c for c in data.cases if c.status in FAILED]
    refused = [c for c in failing if c.status == "error"
               and classify_error(c.message or "", c.exception_type).unsupported_input]
    broken = [c for c in failing if c not in refused]
    findings = _failures(facts, matrix, target, name, broken, passed, data.context_lost)
    if refused:
        findings.append(_refused(name, target, refused))
    return findings


def _verdict(data: Optional[SmokeTarget]) -> str:
    if data is None:
        return "crashed"
    statuses = {c.status for c in data.cases}
    if not statuses:
        return "not tested"
    if statuses & set(FAILED):
        return "failed"
    if "passed" in statuses:
        return "passed"
    return "not applicable" if statuses == {"not_applicable"} else "not tested"


def _summary(facts: Facts, matrix: Matrix, targets: Dict[str, Probe[SmokeTarget]], grid: str
             ) -> Finding:
    """One line for the whole run: which set ran, what passed, and the first calls' cost."""
    groups: Dict[str, List[str]] = {}
    details: Dict[str, object] = {}
    firsts = []
    for target, probe in targets.items():
        name, data = target_name(facts, matrix, target), probe.data
        groups.setdefault(_verdict(data), []).append(name)
        if data is None:
            continue
        counts: Dict[str, int] = {}
        for case in data.cases:
            counts[case.status] = counts.get(case.status, 0) + 1
        details[target] = {"cases": counts, "skipped": data.skipped, "not_applicable": sorted(
            {c.reason for c in data.cases if c.status == "not_applicable" and c.reason})}
        first = data.first_call
        if first is not None and first.first_s is not None and first.first_s >= 1.0:
            firsts.append(f"{name} {first.first_s:.1f} s, then {first.repeat_s * 1000:.0f} ms")
    order = ("passed", "failed", "crashed", "not applicable", "not tested")
    parts = [f"{verdict}: {', '.join(groups[verdict])}" for verdict in order if verdict in groups]
    text = f"{grid} set — " + "; ".join(parts)
    if firsts:
        text += f". First call (lazy loading, JIT compilation): {'; '.join(firsts)}"
    return info(text, grid=grid, targets=details)


def _describe(case: CaseResult) -> Tuple[str, Optional[KernelError]]:
    if case.status == "nonfinite":
        bad = [e.tensor for e in case.errors if not e.finite]
        return f"NaN/Inf in {', '.join(bad)}", None
    if case.status == "wrong":
        worst = [e for e in case.errors if not e.ok]
        parts = [f"{e.tensor} is off by {e.error:.3g} (tolerance {e.tolerance:.3g}: "
                 f"{e.multiple:g}x PyTorch's own {e.pytorch_error:.3g} + rounding)"
                 for e in worst if e.error is not None and e.tolerance is not None
                 and e.pytorch_error is not None]
        return "wrong: " + "; ".join(parts), None
    kernel_error = classify_error(case.message or "", case.exception_type)
    return (f"{case.phase or 'call'} raised {case.exception_type}: "
            f"{(case.message or '').splitlines()[0] if case.message else ''}"), kernel_error


def _failures(facts: Facts, matrix: Matrix, target: str, name: str, broken: List[CaseResult],
              passed: List[str], lost: bool) -> List[Finding]:
    if not broken:
        return []
    described = [(c, *_describe(c)) for c in broken]
    kernel_error = next((k for _, _, k in described if k is not None), None)
    category = kernel_error.category if kernel_error else Category.NUMERICS
    shown = "; ".join(f"[{c.label}] {text}" for c, text, _ in described[:SHOWN])
    more = f" (and {len(broken) - SHOWN} more)" if len(broken) > SHOWN else ""
    why = f" — {kernel_error.explanation}" if kernel_error else ""
    lost_text = "; the CUDA context was lost, later cases were skipped" if lost else ""
    return [Finding(severity=Severity.ERROR, category=category,
                    message=f"{name}: {len(broken)} case(s) failed{why}: {shown}{more}{lost_text}",
                    subject=target,
                    evidence={"failed": [c.model_dump(exclude={"traceback_tail"}) for c in broken]},
                    remedies=_remedies(facts, matrix, target, category, passed))]


def _refused(name: str, target: str, refused: List[CaseResult]) -> Finding:
    kinds = sorted({classify_error(c.message or "", c.exception_type).category.value
                    for c in refused})
    first = (refused[0].message or "").splitlines()[0] if refused[0].message else ""
    return Finding(severity=Severity.INFO, category=Category(kinds[0]),
                   message=f"{name} does not take {len(refused)} of the inputs tried "
                   f"({first}): {', '.join(c.label for c in refused[:SHOWN])}",
                   subject=target, evidence={"refused": [c.label for c in refused]})


def _crashed(facts: Facts, matrix: Matrix, target: str, name: str, probe: Probe[SmokeTarget],
             passed: List[str]) -> Finding:
    failure = probe.failure
    assert failure is not None
    what = "hung" if failure.kind.value == "timeout" else "crashed"
    return Finding(severity=Severity.ERROR, category=Category.KERNEL_FAILURE,
                   message=f"{name}: its kernel test {what}: {failure.reason}",
                   subject=target, evidence=failure.model_dump(),
                   remedies=_remedies(facts, matrix, target, Category.KERNEL_FAILURE, passed))


def _remedies(facts: Facts, matrix: Matrix, target: str, category: Category,
              passed: List[str]) -> List[Remedy]:
    if target.startswith("sdpa_"):
        return sdpa_remedies(facts, matrix, category, [p for p in passed if p != target])
    return family_remedies(facts, matrix, Family(target), category, passed)
