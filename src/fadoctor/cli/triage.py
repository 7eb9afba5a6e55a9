"""`fadoctor triage [FILE|-]`: read a pasted report, print the diagnosis (the command's body;
cli.py registers it)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional, Union

import typer

from fadoctor.cli.options import FLAG
from fadoctor.cli.output import write
from fadoctor.errors import ExitCode, InputError, UsageError

MAX_BYTES = 64 * 1024 * 1024


class TriageFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


def triage_command(
    source: Optional[str] = typer.Argument(None, metavar="[FILE|-]", help="The pasted report: "
                                           "a file, or '-' (default) for standard input."),
    fmt: TriageFormat = typer.Option(TriageFormat.text, "--format", "-f", help="Output format."),
    verbose: bool = typer.Option(False, "--verbose", "-v", metavar=FLAG,
                                 help="Also show every check's result "
                                 "and each finding's evidence."),
    redact: bool = typer.Option(False, "--redact", metavar=FLAG,
                                help="Remove user names, home folders, host "
                                "names and secret-looking values from the output."),
    matrix_path: Optional[Path] = typer.Option(None, "--matrix", metavar="PATH",
                                               help="Use another "
                                               "compatibility matrix YAML."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="PATH",
                                          help="Write the diagnosis to a "
                                          "file instead of stdout."),
) -> int:
    """Diagnose a pasted report (collect_env, pip list, nvidia-smi, a traceback, a build log...)
    without the machine it came from."""
    from fadoctor.matrix import load_matrix
    from fadoctor.report import Severity
    from fadoctor.safety.inert import inert
    from fadoctor.triage.diagnose import triage
    from fadoctor.triage.render import RENDERERS

    raw: Union[bytes, str] = _read(source)
    if redact:  # the pasted text first: no quote is cut short before its secrets are found
        from fadoctor.cli.identity import this_machine
        from fadoctor.safety.redact import redact as scrub
        from fadoctor.safety.redact import redacted
        from fadoctor.triage.text import decode

        who = this_machine()
        raw = scrub(decode(raw), who)
    result = triage(raw, load_matrix(matrix_path))
    if redact:  # and the diagnosis's own values (the matrix's, this machine's)
        result = redacted(result, who)
    text = RENDERERS[fmt.value](inert(result), verbose)  # the pasted text is data
    write(text, output or Path("-"))
    return ExitCode.PROBLEMS if any(d.severity == Severity.ERROR for d in result.diagnosis) \
        else ExitCode.OK


def _read(source: Optional[str]) -> bytes:
    if source is None or source == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("give the report as a file, or pipe it in (fadoctor triage - < report.txt)")
        try:
            data = sys.stdin.buffer.read(MAX_BYTES + 1)
        except OSError as exc:
            raise InputError(f"cannot read standard input: {exc.strerror or exc}") from None
    else:
        from fadoctor.safety.textfile import read_bytes

        data = read_bytes(source, "report", MAX_BYTES)
    if len(data) > MAX_BYTES:
        raise InputError(f"the report is larger than {MAX_BYTES // 2 ** 20} MB")
    if not data.strip():  # nothing to diagnose: not a report without problems
        raise InputError("the input is empty: give the report as a file, or pipe it in "
                         "(fadoctor triage - < report.txt)")
    return data
