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
    redact: Any = None  # the fadoctor.safety.redact.Identity to redact, or None


def is_job_file(path: Optional[Path]) -> bool:
    """Whether a --facts file holds a whole job (`snapshot --distributed`), not one environment:
    its first key after any leading whitespace, as fadoctor writes it, or a `kind` key near it.
    A file that is not regular is left to the facts reader, which refuses it."""
    import stat

    if path is None:
        return False
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return False
        with path.open("rb") as fh:
            head = fh.read(1 << 16).lstrip().decode("utf-8", "replace")
    except OSError:
        return False
    return head.startswith("{") and ('"kind": "distributed"' in head[:400]
                                     or '"kind":"distributed"' in head[:400])
