"""`evaluate(facts, matrix) -> Report`: pure; runs every check and derives each status."""

from __future__ import annotations

from typing import TYPE_CHECKING, AbstractSet, Callable, List, Optional

from fadoctor.checks import ALL_CHECKS, model_checks
from fadoctor.checks.base import Check, Outcome, Skip, status_of, torch_view
from fadoctor.facts.model import Facts
from fadoctor.install.into import installer_of, results_into
from fadoctor.matrix import Matrix
from fadoctor.report import (
    Category,
    CheckResult,
    Environment,
    FamilyRef,
    Finding,
    Report,
    Severity,
    Stack,
    Status,
    Summary,
)

if TYPE_CHECKING:
    from fadoctor.model.spec import ModelFacts


def evaluate(facts: Facts, matrix: Matrix, ignore: AbstractSet[str] = frozenset(),
             model: Optional[ModelFacts] = None) -> Report:
    checks = ALL_CHECKS + (model_checks(model) if model is not None else ())
    results = [run_check(check, facts, matrix) for check in checks
               if check.id not in ignore and check.name not in ignore]
    # Checks write `pip …`; the report says the examined interpreter's (safety.shell.into).
    results = results_into(results, installer_of(facts))
    return Report(
        fadoctor_version=facts.fadoctor_version,
        matrix_date=matrix.data_date,
        target=facts.target,
        environment=environment(facts),
        stack=stack(facts),
        summary=summarize(results),
        checks=results,
    )


def run_check(check: Check, facts: Facts, matrix: Matrix) -> CheckResult:
    return checked(check.id, check.name, check.title, lambda: check.run(facts, matrix))


def checked(check_id: str, name: str, title: str, run: Callable[[], Outcome]) -> CheckResult:
    """A check's result from running it: a crash of the check is its finding, a Skip its skip."""
    try:
        outcome = run()
    except Exception as exc:  # a bug in one check must not hide the others
        outcome = [Finding(severity=Severity.ERROR, category=Category.INTERNAL,
                           message=f"the check itself failed: {type(exc).__name__}: {exc}")]
    if isinstance(outcome, Skip):
        return CheckResult(id=check_id, name=name, title=title, status=Status.SKIPPED,
                           skipped_reason=outcome.reason)
    return CheckResult(id=check_id, name=name, title=title, status=status_of(outcome),
                       findings=outcome)


def summarize(results: List[CheckResult]) -> Summary:
    count = {s: sum(1 for r in results if r.status == s) for s in Status}
    findings = [f for r in results for f in r.findings]
    worst = max(findings, key=lambda f: f.severity.rank).severity if findings else None
    return Summary(passed=count[Status.PASSED], warning=count[Status.WARNING],
                   failed=count[Status.FAILED], skipped=count[Status.SKIPPED], worst=worst)


def stack(facts: Facts) -> Stack:
    host, driver, files = facts.host.data, facts.driver.data, torch_view(facts)
    gpus = (driver.gpus or []) if driver else []
    return Stack(
        python=host.python_version if host else None, machine=host.machine if host else None,
        libc=(f"{host.libc} {host.libc_version}" if host and host.libc and host.libc_version
              else None),
        torch=files.version if files else None, torch_cuda=files.cuda if files else None,
        torch_hip=files.hip if files else None, cxx11_abi=files.cxx11_abi if files else None,
        driver=driver.version if driver and driver.present else None,
        gpu_archs=sorted({f"sm_{g.compute_capability.replace('.', '')}" for g in gpus
                          if g.compute_capability}),
        families=[FamilyRef(family=fa.family.value, distribution=fa.distribution,
                            version=fa.version) for fa in facts.flash_attention if fa.installed])


def environment(facts: Facts) -> Environment:
    host, torch, driver = facts.host.data, facts.torch.data, facts.driver.data
    torch_line: Optional[str] = None
    if torch is not None:
        build = f"CUDA {torch.cuda}" if torch.cuda else (f"ROCm {torch.hip}" if torch.hip
                                                         else "CPU")
        torch_line = f"{torch.version} ({build})"
    elif (files := torch_view(facts)) is not None:
        torch_line = f"{files.version} (CUDA {files.cuda or 'none'}; from its files, not imported)"
    elif facts.torch.failure is not None:
        torch_line = f"unavailable ({facts.torch.failure.kind.value})"
    return Environment(
        python=(f"{host.python_version or '?'} at {host.python_executable or '?'}"
                if host else None),
        platform=(f"{host.os_release or host.os or '?'} {host.machine or '?'}, " + (
            f"{host.libc} {host.libc_version}" if host.libc and host.libc_version
            else "libc unknown")) if host else None,
        torch=torch_line,
        driver=(f"{driver.version} (CUDA {driver.cuda_version or '?'})" if driver.present
                else "none") if driver else None,
        gpus=[f"{g.name} (sm_{(g.compute_capability or '?').replace('.', '')})"
              for g in ((driver.gpus or []) if driver else [])],
        flash_attention=[f"{fa.distribution or fa.family.value} {fa.version or ''}".strip()
                         for fa in facts.flash_attention if fa.installed],
    )
