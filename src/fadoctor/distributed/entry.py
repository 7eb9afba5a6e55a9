"""What the command line needs of the distributed check before it knows whether it runs: telling
a job's facts file from one environment's, the rank agent's path, and the commands' entry
points. Light: `check` decides before it imports the models, and `--help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Sequence

import typer

from fadoctor.help_text import DISTRIBUTED_HELP, FACTS_DIR_HELP

__all__ = ["DISTRIBUTED_HELP", "FACTS_DIR_HELP", "JobArgs", "Reporting", "is_job_file",
           "job_check", "job_snapshot", "rank_script_command"]

if TYPE_CHECKING:
    from fadoctor.report import Report

AGENT = Path(__file__).resolve().parents[1] / "target" / "rank_agent.py"


class JobArgs(NamedTuple):
    """The options of `check`/`snapshot` that decide how the job's facts are got."""

    distributed: bool
    facts_dir: Optional[Path]
    facts_file: Optional[Path]
    python: Optional[str]
    timeout: Optional[float]
    kernels: Any  # a fadoctor.formats.KernelSet, or None
    static: bool
    extension: Sequence[Path]
    compile_: bool
    model: Optional[str] = None


class Reporting(NamedTuple):
    """How `check` reports the job: what `check` itself takes."""

    fmt: Any  # a fadoctor.formats.Format
    verbose: bool = False
    ignore: Sequence[str] = ()
    only: Sequence[str] = ()
    matrix_path: Optional[Path] = None
    output: Optional[Path] = None


def is_job_file(path: Optional[Path]) -> bool:
    """Whether a --facts file holds a whole job (`snapshot --distributed`), not one environment."""
    if path is None or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as fh:
            head = fh.read(200)
    except (OSError, UnicodeDecodeError):
        return False
    return '"kind": "distributed"' in head or '"kind":"distributed"' in head


def job_check(args: JobArgs, how: Reporting, emit: Callable[[str], None],
              verdict: Callable[[Report], int]) -> int:
    from fadoctor.distributed import command

    return command.check_job(command.request_of(args), how, emit, verdict)


def job_snapshot(args: JobArgs, emit: Callable[[str], None]) -> int:
    from fadoctor.distributed import command

    return command.snapshot_job(command.request_of(args), emit)


def rank_script_command() -> int:
    """Print the path of the rank agent, for a job's launcher to run on every rank:
    `torchrun --nproc-per-node 8 $(fadoctor rank-script) --out DIR`, then
    `fadoctor check --facts-dir DIR`."""
    typer.echo(str(AGENT))
    return 0
