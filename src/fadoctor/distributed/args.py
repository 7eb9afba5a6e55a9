"""What the command line needs of the distributed check before it knows whether it runs: the
options that decide how a job's facts are got, how it is reported, telling a job's facts file from
one environment's, and the rank agent's path. Standard library only: `check` decides before it
imports the models, and `--help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple, Optional, Sequence

AGENT = Path(__file__).resolve().parents[1] / "in_target" / "rank_agent.py"


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
    redact: bool = False


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
