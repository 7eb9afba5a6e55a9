"""Which installer reaches the examined environment, and remedies rewritten to use it: every
`pip`/`python` command a check, a plan or a triage writes runs the examined interpreter's (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, TypeVar

from fadoctor.facts.model import Facts
from fadoctor.report import CheckResult, Finding, Remedy, Report
from fadoctor.safety.shell import Installer, into

# An interpreter's prefix, as a traceback's site-packages path names it. A match starts only where
# a path starts (the look-behind): a search restarting inside a long path would make it quadratic.
_SITE = re.compile(r"(?<![\w.+/-])((?:/[\w.+-]+)+)/lib/python3\.\d+t?/site-packages/")
UNKNOWN = Installer()
NOT_NAMED = ("remedies say `python -m pip`: the report names no interpreter, so run them with "
             "the python of the environment that printed it")


def _carried(python: str) -> bool:
    """A path a command can carry: absolute, printable, decodable (else `python -m pip`)."""
    return ((python.startswith("/") or "\\" in python) and python.isprintable()
            and not any("\udc80" <= ch <= "\udcff" for ch in python))


def installer_of(facts: Facts) -> Installer:
    """The examined interpreter, and whether it has pip: one whose packages uv installed and that
    holds no pip is uv-made (uv's venvs have none); any other is taken to have it (a package
    list abridged to what matters, as the fixtures are, may leave pip out)."""
    host = facts.host.data
    python = (host.python_executable if host is not None else None) or facts.target.python
    if facts.origin == "pasted" or not _carried(python):
        return UNKNOWN
    packages = facts.packages.data
    pip = packages is None or packages.get("pip") is not None or not any(
        d.installer == "uv" for d in packages.distributions)
    return Installer(python=python, pip=pip, known=True)


def installer_of_report(report: Report) -> Installer:
    """The interpreter a recorded report examined (its package list is not in it: pip assumed)."""
    python = report.target.python
    return Installer(python=python, pip=True, known=True) if _carried(python) else UNKNOWN


def named_in(text: str) -> Optional[Installer]:
    """The interpreter a pasted traceback's site-packages paths name, when they all name one."""
    prefixes = {m.group(1) for m in _SITE.finditer(text)}
    if len(prefixes) != 1:
        return None
    prefix = prefixes.pop()
    if prefix.endswith("/.local"):
        return None  # the user site of some system python, whose path the text does not give
    return Installer(python=f"{prefix}/bin/python", pip=True, known=True)


def remedy_into(remedy: Remedy, inst: Installer) -> Remedy:
    if not remedy.commands:
        return remedy
    return remedy.model_copy(update={"commands": [into(c, inst) for c in remedy.commands]})


F = TypeVar("F", bound=Finding)


def finding_into(finding: F, inst: Installer) -> F:
    if not finding.remedies:
        return finding
    return finding.model_copy(update={"remedies": [remedy_into(r, inst)
                                                   for r in finding.remedies]})


def results_into(results: Sequence[CheckResult], inst: Installer) -> List[CheckResult]:
    return [r.model_copy(update={"findings": [finding_into(f, inst) for f in r.findings]})
            if r.findings else r for r in results]


def commands_into(commands: Sequence[str], inst: Installer) -> List[str]:
    return [into(c, inst) for c in commands]
