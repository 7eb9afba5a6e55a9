"""FAD109: torch's own requirements hold, as `pip check` holds them: a triton (or an nvidia-*
runtime wheel) of a version outside the range torch's Requires-Dist pins breaks torch.compile,
Triton kernels and FlashAttention-4 (pure)."""

from __future__ import annotations

from fadoctor.checks.base import Outcome, Skip, info, why_unknown
from fadoctor.checks.dependencies import Unmet, marker_environment, spec_of, unmet_requirements
from fadoctor.checks.remedies import remedy
from fadoctor.facts.model import Facts
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Severity
from fadoctor.safety.shell import command


def check_torch_requirements(facts: Facts, matrix: Matrix) -> Outcome:
    packages = facts.packages.data
    if packages is None:
        return why_unknown("the installed distributions", facts.packages)
    torch = packages.get("torch")
    if torch is None:
        return Skip("torch is not installed (FAD102)")
    if torch.requires is None:
        return Skip("torch's Requires-Dist was not read (facts of an older fadoctor)")
    # Only what is installed at another version: the package list holds the distributions that
    # matter to attention, not all of torch's (filelock, sympy...), so an absent one is unknown.
    wrong = [u for u in unmet_requirements(torch.requires, packages.distributions,
                                           marker_environment(facts), set())
             if u.installed is not None]
    if not wrong:
        return [info(f"the requirements of torch {torch.version} that are installed are of "
                     "versions it accepts")]
    return [_conflict(torch.version, u) for u in wrong]


def _conflict(torch: str, unmet: Unmet) -> Finding:
    spec = spec_of(unmet.requirement)
    name = unmet.requirement.name
    return Finding(
        severity=Severity.WARNING, category=Category.VERSION_CONFLICT, subject=name,
        message=f"torch {torch} requires {spec}, but {name} {unmet.installed} is installed "
                "(pip check reports it too)",
        evidence={"torch": torch, "requires": spec, "installed": unmet.installed},
        remedies=[remedy(f"Install the {name} torch {torch} requires (--no-deps: torch stays).",
                         lambda: [command("pip", "install", "--no-deps", spec)])])
