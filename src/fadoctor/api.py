"""The Python API: `check()` returns the report `fadoctor check --format json` prints, and
`preflight()` raises `PreflightError` (carrying it) when the report has problems.

Both run the same isolated probes as the command line: torch, flash-attention and transformers are
imported only in child processes of the examined interpreter, under timeouts, so calling them from
a training script imports none of those into the caller and survives their crashes. Stability
promise: docs/python-api.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Literal, Optional, Union

from fadoctor.errors import ExitCode, FadoctorError, UsageError

if TYPE_CHECKING:
    from fadoctor.report import Finding, Report

Kernels = Literal["default", "full", "none"]
FailOn = Literal["error", "warning"]


class PreflightError(FadoctorError):
    """The environment has problems at or above `fail_on`: `.report` holds the whole report,
    `.problems` the findings that failed it."""

    exit_code = ExitCode.PROBLEMS  # what `fadoctor check` exits with for the same report

    def __init__(self, report: Report, problems: list[Finding]) -> None:
        self.report = report
        self.problems = problems
        lines = [f"fadoctor preflight: {len(problems)} problem(s) in {report.target.python}"]
        lines += [f"  {p.severity.value}: {p.message}" for p in problems[:10]]
        super().__init__("\n".join(lines))


def check(python: Optional[str] = None, kernels: Kernels = "default", *,
          compile: bool = False, static: bool = False, timeout: Optional[float] = None,
          ignore: Iterable[str] = (), only: Iterable[str] = (),
          matrix: Union[str, Path, None] = None) -> Report:
    """Examine an environment and return the report (`check --format json`'s model).

    `python`: the interpreter (or environment folder) to examine; None: the running one
    (sys.executable), which is the one a training script trains in. `kernels`: the smoke tests
    ("default", "full", or "none"); `compile`: also probe torch.compile; `static`: read files only,
    import nothing; `timeout`: seconds for each stage; `ignore` / `only`: check IDs or names.
    Raises `fadoctor.errors.UsageError` (bad arguments) or `InputError` (unreadable matrix)."""
    from fadoctor.checks import ALL_CHECKS, BY_KEY
    from fadoctor.collect.run import Collection
    from fadoctor.collect.target import CollectOptions
    from fadoctor.evaluate import evaluate
    from fadoctor.in_target.registry import BY_NAME
    from fadoctor.matrix import load_matrix
    from fadoctor.probes.kernels import KernelOptions

    if kernels not in ("default", "full", "none"):
        raise UsageError(f"kernels={kernels!r}: one of 'default', 'full', 'none'")
    ignored, chosen = list(ignore), list(only)
    unknown = [k for k in ignored + chosen if k not in BY_KEY]
    if unknown:
        raise UsageError(f"no check {unknown[0]!r}; `fadoctor explain` lists them")
    if timeout is not None and not timeout > 0:
        raise UsageError(f"timeout={timeout!r}: a number of seconds above 0")
    options = CollectOptions(
        python=python or sys.executable,
        timeouts={stage: timeout for stage in BY_NAME} if timeout else {}, static=static,
        kernels=KernelOptions(smoke=kernels, compile=compile))
    loaded = load_matrix(Path(matrix) if matrix is not None else None)  # bad input: before probes
    facts = Collection(options).facts()
    selected = {BY_KEY[k].id for k in chosen}
    left_out = {BY_KEY[k].id for k in ignored} | {c.id for c in ALL_CHECKS
                                                  if selected and c.id not in selected}
    return evaluate(facts, loaded, ignore=left_out)


def problems(report: Report, fail_on: FailOn = "error") -> list[Finding]:
    """The findings that fail `report` at `fail_on` (what makes `check` exit 1), with any error
    of fadoctor's own."""
    from fadoctor.report import Severity

    if fail_on not in ("error", "warning"):
        raise UsageError(f"fail_on={fail_on!r}: 'error' or 'warning'")
    threshold = Severity(fail_on).rank
    return [f for f in report.findings()
            if f.severity != Severity.INFO and f.severity.rank >= threshold]


def preflight(fail_on: FailOn = "error", python: Optional[str] = None,
              kernels: Kernels = "default", *, compile: bool = False, static: bool = False,
              timeout: Optional[float] = None, ignore: Iterable[str] = (),
              only: Iterable[str] = (), matrix: Union[str, Path, None] = None) -> Report:
    """`check()`, then raise `PreflightError` if a finding of `fail_on` severity or worse is
    found; returns the report otherwise (warnings below `fail_on` included)."""
    report = check(python, kernels, compile=compile, static=static, timeout=timeout,
                   ignore=ignore, only=only, matrix=matrix)
    failed = problems(report, fail_on)
    if failed:
        raise PreflightError(report, failed)
    return report
