"""What a check is: a small pure function with a stable ID, returning findings or a skip."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Union

from packaging.version import InvalidVersion, Version

from fadoctor.facts.model import Facts, Failure, Probe
from fadoctor.install.views import torch_view as torch_view  # where the checks import it from
from fadoctor.matrix import Matrix
from fadoctor.report import Finding, Severity, Status


@dataclass(frozen=True)
class Skip:
    """The check could not run: its inputs are unknown. The reason says which and why."""

    reason: str


Outcome = Union[List[Finding], Skip]
CheckFn = Callable[[Facts, Matrix], Outcome]


@dataclass(frozen=True)
class Check:
    id: str  # FADnnn: JUnit test name, --ignore key, documentation anchor
    name: str  # kebab-case alias
    title: str  # one line, what a pass means
    doc: str  # `fadoctor explain`: what it checks, from which facts, and why it matters
    run: CheckFn


def status_of(findings: List[Finding]) -> Status:
    worst = max((f.severity.rank for f in findings), default=0)
    return {2: Status.FAILED, 1: Status.WARNING, 0: Status.PASSED}[worst]


def why_unknown(what: str, probe: Probe[Any]) -> Skip:
    """`needs X, which failed because Y` for a probe without data."""
    failure: Optional[Failure] = probe.failure
    reason = f"{failure.kind.value}: {failure.reason}" if failure else "unknown"
    return Skip(f"needs {what}, which could not be gathered ({reason})")


def unreported(what: str) -> Skip:
    """`needs X, which is unknown` for a fact the source did not report (None in the facts)."""
    return Skip(f"needs {what}, which is unknown: the facts do not report it")


def version(text: Optional[str]) -> Optional[Version]:
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def release(v: Version) -> Version:
    """major.minor of a version, as a Version (2.13.0+cu130 -> 2.13)."""
    return Version(f"{v.major}.{v.minor}")


def info(message: str, **evidence: object) -> Finding:
    from fadoctor.report import Category

    return Finding(severity=Severity.INFO, category=Category.INFO, message=message,
                   evidence=dict(evidence))
