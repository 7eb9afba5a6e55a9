"""Which installer reaches the examined environment, and remedies rewritten to use it: every
`pip`/`python` command a check, a plan or a triage writes runs the examined interpreter's (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, TypeVar

from fadoctor.facts.model import Facts
from fadoctor.report import CheckResult, Finding, Remedy, Report
from fadoctor.safety.shell import Installer, into_lines

# An interpreter's prefix, as a traceback's site-packages path names it. A match starts only where
# a path starts (the look-behind): a search restarting inside a long path would make it quadratic.
_SITE = re.compile(r"(?<![\w.+/-])((?:/[\w.+-]+)+)/lib/python3\.\d+t?/site-packages/")
# The same on Windows: PREFIX\Lib\site-packages\ (a venv's interpreter is PREFIX\Scripts\python.exe;
# an installed, conda or embedded Python's is PREFIX\python.exe)
_WIN_SITE = re.compile(r"(?<![\w.+\\-])([A-Za-z]:(?:\\[\w .+()-]+)+?)\\Lib\\site-packages\\", re.I)
# pip's isolated build environments (pip-build-env-XXXX/overlay, /normal) and uv's build envs
_BUILD_ENV = re.compile(r"pip-build-env-|[/\\]builds-v\d+[/\\]")
_VENV = re.compile(r"\.?venv\w*|\w*[-_.]?env", re.I)
# PowerShell's prompt (PS C:\...>) and cmd.exe's (C:\...>) before a command the reporter ran
_PS_PROMPT = re.compile(r"^\s*PS [A-Za-z]:\\[^\n>]*>", re.M)
_CMD_PROMPT = re.compile(r"^\s*(?:\([\w.-]+\) )?[A-Za-z]:\\[^\n>]*>\s?\S", re.M)
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
    # remedies shown for a Windows machine are written for PowerShell (`into_lines`); what
    # fadoctor runs itself (fix --verify/--apply) takes them in the POSIX form (cli/verify.py)
    shell = "powershell" if host is not None and (host.os or "").lower() == "windows" else "posix"
    return Installer(python=python, pip=pip, known=True, shell=shell)


def installer_of_report(report: Report) -> Installer:
    """The interpreter a recorded report examined (its package list is not in it: pip assumed)."""
    python = report.target.python
    return Installer(python=python, pip=True, known=True) if _carried(python) else UNKNOWN


def shell_of(text: str, windows: bool) -> str:
    """The shell a pasted report's remedies are for: POSIX unless it comes from Windows; there
    cmd.exe where its prompt shows, else PowerShell (the default terminal of Windows 10 and 11,
    and where a cmd.exe `set` would silently set no environment variable)."""
    if not windows or _PS_PROMPT.search(text):
        return "powershell" if windows else "posix"
    return "cmd" if _CMD_PROMPT.search(text) else "powershell"


def named_in(text: str, shell: str = "posix") -> Optional[Installer]:
    """The interpreter a pasted traceback's site-packages paths name, when they all name one."""
    # only the lines naming site-packages (Python writes it in lower case on every platform)
    # (each once: a log repeats its traceback lines)
    lines = list(dict.fromkeys(line for line in text.splitlines() if "site-packages" in line)) \
        if "site-packages" in text else []
    # never pip's (or uv's) temporary build environment: it is gone when the build ends
    prefixes = {m.group(1) for line in lines for m in _SITE.finditer(line)
                if not _BUILD_ENV.search(m.group(1))}
    windows = {m.group(1) for line in lines if ":\\" in line for m in _WIN_SITE.finditer(line)
               if not _BUILD_ENV.search(m.group(1))}
    if len(prefixes) + len({w.lower() for w in windows}) != 1:
        return None
    if windows:
        prefix = windows.pop()
        parent, _, last = prefix.rpartition("\\")
        venv = not parent.lower().endswith("\\envs") and (  # conda's envs\NAME hold python.exe
            _VENV.fullmatch(last) is not None or f"{prefix}\\scripts\\".lower() in text.lower())
        python = f"{prefix}\\Scripts\\python.exe" if venv else f"{prefix}\\python.exe"
        return Installer(python=python, pip=True, known=True, shell=shell)
    prefix = prefixes.pop()
    if prefix.endswith("/.local"):
        return None  # the user site of some system python, whose path the text does not give
    return Installer(python=f"{prefix}/bin/python", pip=True, known=True, shell=shell)


def remedy_into(remedy: Remedy, inst: Installer) -> Remedy:
    if not remedy.commands:
        return remedy
    return remedy.model_copy(update={"commands": commands_into(remedy.commands, inst)})


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
    return [line for c in commands for line in into_lines(c, inst)]
