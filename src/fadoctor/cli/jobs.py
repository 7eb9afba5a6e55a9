"""The commands' entry points into the distributed check: `check`/`snapshot` of a whole job
(`--distributed`, `--facts-dir`, a job's facts file) and `rank-script`. The job's models load only
when a job is checked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from fadoctor.distributed.args import AGENT, JobArgs, Reporting

if TYPE_CHECKING:
    from fadoctor.report import Report


def job_check(args: JobArgs, how: Reporting, emit: Callable[[str], None],
              verdict: Callable[[Report], int]) -> int:
    from fadoctor.distributed import command

    how = how._replace(redact=_who(bool(how.redact)))
    return command.check_job(command.request_of(args), how, emit, verdict)


def job_snapshot(args: JobArgs, emit: Callable[[str], None], redact: bool = False) -> int:
    from fadoctor.distributed import command

    return command.snapshot_job(command.request_of(args), emit, _who(redact))


def _who(redact: bool) -> Any:
    """This machine's identity to redact, or None."""
    if not redact:
        return None
    from fadoctor.cli.identity import this_machine

    return this_machine()


def rank_script_command() -> int:
    """Print the path of the rank agent, for a job's launcher to run on every rank:
    `torchrun --nproc-per-node 8 $(fadoctor rank-script) --out DIR`, then
    `fadoctor check --facts-dir DIR`."""
    from fadoctor.cli.output import write

    write(f"{AGENT}\n")
    return 0
