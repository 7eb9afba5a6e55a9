"""`fadoctor compat record|merge|show`: reports of real combinations into one compatibility.json,
and the table people look for. Register with `app.add_typer(compat_app, name="compat")`; the
models load inside the commands, so `--help` stays instant."""

from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from fadoctor.cli.guard import guarded
from fadoctor.errors import UsageError

compat_app = typer.Typer(
    name="compat",
    help="Record torch x flash-attention combinations that ran, merge them, show the table.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class TableFormat(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


OUTPUT = typer.Option(None, "--output", "-o", metavar="FILE", help="Write here (default: stdout).")


@compat_app.command()
@guarded
def record(report: Path = typer.Argument(..., metavar="REPORT", help="A `check --format json` report."),
           runner: Optional[str] = typer.Option(None, "--runner", metavar="LABEL",
                                                help="Where it ran (a CI runner's label)."),
           extra: List[str] = typer.Option([], "--extra", metavar="REQ", help="What else was "
                                           "installed with the combination (repeatable)."),
           bench: Optional[Path] = typer.Option(None, "--bench", metavar="FILE", help="A `fadoctor "
                                                "bench --format json` report of the same environment."),
           output: Optional[Path] = OUTPUT) -> int:
    """The report's combinations as a compatibility file: its stack and checks, when and where
    it ran (one record per installed flash-attention family), and its bench timings if given."""
    from fadoctor.compat.records import read, with_bench

    when = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    records = [r.model_copy(update={
        "ran_at": when, "runner": runner or r.runner,
        "combination": r.combination.model_copy(update={"extras": sorted(extra)})})
        for r in read(report)]
    if bench is not None:
        records = with_bench(records, bench)
    _write(output, _file(records))
    return 0


@compat_app.command()
@guarded
def merge(inputs: List[Path] = typer.Argument(..., metavar="REPORT...", help="Reports, records "
                                              "or compatibility files."),
          output: Optional[Path] = OUTPUT) -> int:
    """Merge reports, records and compatibility files into one compatibility.json."""
    from fadoctor.compat.records import read

    _write(output, _file([r for path in inputs for r in read(path)]))
    return 0


@compat_app.command()
@guarded
def show(path: Path = typer.Argument(..., metavar="FILE", help="A compatibility file (or reports)."),
         fmt: TableFormat = typer.Option(TableFormat.text, "--format", "-f", help="Output format."),
         output: Optional[Path] = OUTPUT) -> int:
    """The table: torch down, flash-attention across; works, fails (with why), or not run."""
    from fadoctor.compat import table
    from fadoctor.compat.records import merged, read

    data = merged([read(path)])
    render = {TableFormat.text: table.text, TableFormat.markdown: table.markdown,
              TableFormat.json: table.as_json}[fmt]
    _write(output, render(data))
    return 0


def _file(records: list) -> str:  # type: ignore[type-arg]
    from fadoctor.compat.records import merged

    if not records:
        raise UsageError("nothing to merge: no report, record or compatibility file was given")
    return merged([records]).model_dump_json(indent=2) + "\n"


def _write(output: Optional[Path], text: str) -> None:
    from fadoctor.cli.output import write

    write(text, output)
