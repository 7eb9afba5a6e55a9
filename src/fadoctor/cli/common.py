"""What the commands that examine an environment share: collecting its facts (with the progress
line), rendering and writing a report, redaction, and the exit code a report calls for."""

from pathlib import Path
from typing import TYPE_CHECKING, Callable, List, Optional

from fadoctor.cli.early import adopt, collect_options
from fadoctor.cli.inputs import _check_extension, _redacted, told
from fadoctor.errors import ExitCode
from fadoctor.formats import FailOn, Format

if TYPE_CHECKING:
    from fadoctor.facts.model import Facts
    from fadoctor.probes.kernels import KernelOptions
    from fadoctor.report import Report


def _collect(python: Optional[str], timeout: Optional[float], static: bool,
             extensions: List[Path], meanwhile: Callable[[], None] = lambda: None,
             kernels: Optional["KernelOptions"] = None) -> "Facts":
    """Start the probes (or adopt those `cli.early` started), run `meanwhile` while they work,
    and return the facts."""
    from fadoctor.collect.run import Collection
    from fadoctor.in_target.registry import BY_NAME

    for ext in extensions:
        _check_extension(ext)
    options = collect_options(python, timeout, static, extensions, kernels)
    from fadoctor.cli.output import terminal

    if not terminal(2):  # a log, a pipe, TERM=dumb: no spinner
        collection = adopt(options) or Collection(options)
        meanwhile()
        return told(collection.facts())
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("fadoctor: starting the target interpreter") as status:
        def progress(stage: str) -> None:
            status.update(f"fadoctor: {BY_NAME[stage].label}" if stage in BY_NAME
                          else "fadoctor: working")

        collection = adopt(options, progress) or Collection(options, progress=progress)
        meanwhile()
        facts = collection.facts()
    return told(facts)


def _emit(report: "Report", fmt: Format, verbose: bool, output: Optional[Path],
          redact: bool = False) -> None:
    from fadoctor.cli.output import colour, columns, terminal
    from fadoctor.render.dispatch import render
    from fadoctor.render.options import RenderOptions

    to_terminal = output is None and terminal(1)
    color = to_terminal and fmt == Format.TEXT and colour(1)
    options = RenderOptions(verbose=verbose, color=color, wrap=to_terminal,
                            width=columns(100) if output is None else 100)
    text = render(_redacted(report, redact), fmt, options)
    _write(output or Path("-"), text)


def _write(path: Path, text: str) -> None:
    from fadoctor.cli.output import write

    write(text, path)


def _exit_code(report: "Report", fail_on: FailOn) -> int:
    from fadoctor.report import Category, Severity

    findings = report.findings()
    if any(f.category == Category.INTERNAL and f.severity == Severity.ERROR for f in findings):
        return ExitCode.INTERNAL
    threshold = Severity(fail_on.value).rank
    if any(f.severity.rank >= threshold for f in findings if f.severity != Severity.INFO):
        return ExitCode.PROBLEMS
    return ExitCode.OK
