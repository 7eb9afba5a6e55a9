"""The one-line preflight of a training script: run it on rank 0 only, log the report, stop the
run on problems. The rank comes from the launcher's environment (torchrun, accelerate launch and
deepspeed all set RANK; SLURM sets SLURM_PROCID), so nothing is imported to learn it."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Mapping, Optional

if TYPE_CHECKING:
    from fadoctor.api import FailOn
    from fadoctor.report import Report

LOG = logging.getLogger("fadoctor")
RANK_VARIABLES = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def rank(environ: Optional[Mapping[str, str]] = None) -> int:
    """This process's global rank, from the launcher's variables; 0 when none is set."""
    env = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        value = env.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def summary(report: Report) -> str:
    """One line per check that did not pass, after the report's summary line."""
    s = report.summary
    lines = [f"fadoctor: {s.passed} passed, {s.warning} warning, {s.failed} failed, "
             f"{s.skipped} skipped ({report.target.python})"]
    for check in report.checks:
        for finding in check.findings:
            if finding.severity.value != "info":
                lines.append(f"  {check.id} {finding.severity.value}: {finding.message}")
    return "\n".join(lines)


def preflight_on_rank0(fail_on: FailOn = "error", *, log: Optional[logging.Logger] = None,
                       **options: Any) -> Optional[Report]:
    """On rank 0: `fadoctor.preflight(fail_on, **options)`, its summary logged; raises
    `fadoctor.PreflightError` on problems, which stops the run (torchrun and accelerate end
    every rank when one fails). On the other ranks: nothing, and None.

        import fadoctor.integrations; fadoctor.integrations.preflight_on_rank0()
    """
    if rank() != 0:
        return None
    from fadoctor.api import PreflightError, check, problems

    logger = log or LOG
    report = check(**options)
    failed = problems(report, fail_on)
    # Problems at error level, so that they show without any logging set up; a warning below
    # fail_on at warning level; a clean report at info.
    worst = report.summary.worst.value if report.summary.worst is not None else "info"
    level = logging.ERROR if failed else (logging.WARNING if worst != "info" else logging.INFO)
    logger.log(level, "%s", summary(report))
    if failed:
        raise PreflightError(report, failed)
    return report
