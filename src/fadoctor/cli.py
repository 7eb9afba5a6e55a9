"""The command line: thin typer commands over collect -> evaluate -> render, and the one error map.

Heavy modules (pydantic models, the matrix, rich) are imported inside the commands so that
`fadoctor --help` probes nothing and starts fast.
"""

import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable, List, Optional

import typer

from fadoctor import __version__
from fadoctor.errors import ExitCode, InputError, UsageError, invalid
from fadoctor.formats import Format, PinFormat
from fadoctor.guard import DEBUG, guarded
from fadoctor.matrix.cli import matrix_app

if TYPE_CHECKING:
    from fadoctor.distributed.command import JobRequest
    from fadoctor.facts import Facts
    from fadoctor.matrix import Matrix
    from fadoctor.render import RenderOptions
    from fadoctor.report import Report

app = typer.Typer(
    name="fadoctor",
    help="A compatibility doctor for PyTorch + flash-attention environments.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class FailOn(str, Enum):
    error = "error"
    warning = "warning"


PYTHON_HELP = ("Interpreter (or environment folder) to examine. Default: the active virtualenv, "
               "then conda env, then the interpreter running fadoctor.")
TIMEOUT_HELP = "Seconds each probe stage may take before it is killed (default: per stage)."
STATIC_HELP = ("Only read files: import neither torch nor flash-attention in any process "
               "(the library, symbol, glibc and kernel checks still run).")
EXTENSION_HELP = "Also analyse this compiled extension (.so) statically (repeatable)."
DISTRIBUTED_HELP = ("Run as one rank of a job started by its launcher (torchrun, srun): every rank "
                    "probes itself, rank 0 gathers and reports for the whole job.")
FACTS_DIR_HELP = ("The rank agents' folder (`fadoctor rank-script`): diagnose the job it holds; "
                  "with --distributed, where to keep the ranks' records.")
def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"fadoctor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version_callback,
                                 is_eager=True, help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of fadoctor's own errors."),
) -> None:
    """Examine the environment you train in and say whether flash-attention will work there."""
    DEBUG["on"] = debug


@app.command()
@guarded
def check(
    python: Optional[str] = typer.Option(None, "--python", help=PYTHON_HELP),
    facts_file: Optional[Path] = typer.Option(None, "--facts", help="Diagnose a facts file "
                                              "(from `fadoctor snapshot`) instead of this machine."),
    fmt: Format = typer.Option(Format.TEXT, "--format", "-f", help="Output format."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show passed checks' details "
                                 "and the evidence behind each finding."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding of "
                                   "this severity or worse is found."),
    ignore: List[str] = typer.Option([], "--ignore", help="Check ID or name to skip "
                                     "(repeatable)."),
    matrix_path: Optional[Path] = typer.Option(None, "--matrix", help="Use another "
                                               "compatibility matrix YAML."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help=TIMEOUT_HELP, min=1),
    static: bool = typer.Option(False, "--static", help=STATIC_HELP),
    extension: List[Path] = typer.Option([], "--extension", help=EXTENSION_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to a "
                                          "file instead of stdout."),
    distributed: bool = typer.Option(False, "--distributed", help=DISTRIBUTED_HELP),
    facts_dir: Optional[Path] = typer.Option(None, "--facts-dir", help=FACTS_DIR_HELP),
) -> int:
    """Check the target environment (or a facts file) and print the diagnosis."""
    from fadoctor.distributed.files import is_job_file

    if ignore:
        _check_ignore(ignore)
    if distributed or facts_dir is not None or is_job_file(facts_file):
        from fadoctor.distributed.command import JobRequest, check_conflicts

        request = JobRequest(distributed, facts_dir, facts_file, python, timeout)
        check_conflicts(request, static, extension)
        return _check_job(request, fmt, verbose, fail_on, ignore, matrix_path, output)
    if facts_file is not None and (python is not None or static or extension):
        raise UsageError("--facts diagnoses saved facts: --python, --static and --extension "
                         "apply when probing")
    loaded: List[Matrix] = []

    def load() -> None:  # runs while the target interpreter imports torch
        from fadoctor.matrix import load_matrix

        loaded.append(load_matrix(matrix_path))

    if facts_file is not None:
        facts = _read_facts(facts_file)
        load()
    else:
        facts = _collect(python, timeout, static, extension, meanwhile=load)
    from fadoctor.checks import BY_KEY
    from fadoctor.evaluate import evaluate

    report = evaluate(facts, loaded[0], ignore={BY_KEY[k].id for k in ignore if k in BY_KEY})
    _emit(report, fmt, verbose, output)
    return _exit_code(report, fail_on)


def _check_job(request: "JobRequest", fmt: Format, verbose: bool, fail_on: FailOn,
               ignore: List[str], matrix_path: Optional[Path], output: Optional[Path]) -> int:
    """check --distributed / --facts-dir: the job's report on rank 0 (other ranks print nothing)."""
    from fadoctor.distributed.command import ignore_ids, job_facts

    loaded: List[Matrix] = []

    def load() -> None:  # on rank 0, while the ranks probe
        from fadoctor.distributed import evaluate, render  # noqa: F401 (imported ahead)
        from fadoctor.matrix import load_matrix

        loaded.append(load_matrix(matrix_path))

    job = job_facts(request, meanwhile=load)
    if job is None:
        return ExitCode.OK
    from fadoctor.distributed.evaluate import evaluate_job
    from fadoctor.distributed.render import render_job

    report = evaluate_job(job, loaded[0], ignore_ids(set(ignore)))
    _write(output or Path("-"), render_job(report, fmt, _render_options(fmt, verbose, output)))
    return _exit_code(report.merged, fail_on)


@app.command()
@guarded
def snapshot(
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the facts JSON "
                                "('-' for stdout)."),
    python: Optional[str] = typer.Option(None, "--python", help=PYTHON_HELP),
    timeout: Optional[float] = typer.Option(None, "--timeout", help=TIMEOUT_HELP, min=1),
    static: bool = typer.Option(False, "--static", help=STATIC_HELP),
    extension: List[Path] = typer.Option([], "--extension", help=EXTENSION_HELP),
    distributed: bool = typer.Option(False, "--distributed", help=DISTRIBUTED_HELP),
    facts_dir: Optional[Path] = typer.Option(None, "--facts-dir", help=FACTS_DIR_HELP),
) -> int:
    """Save the facts about the target environment, to diagnose elsewhere with `check --facts`."""
    if distributed or facts_dir is not None:
        from fadoctor.distributed.command import JobRequest, check_conflicts, job_facts

        request = JobRequest(distributed, facts_dir, None, python, timeout)
        check_conflicts(request, static, extension)
        job = job_facts(request)
        if job is not None:  # rank 0 writes the job's facts
            _write(output, job.model_dump_json(indent=2) + "\n")
        return ExitCode.OK
    facts = _collect(python, timeout, static, extension)
    _write(output, facts.model_dump_json(indent=2) + "\n")
    return ExitCode.OK


@app.command("rank-script")
@guarded
def rank_script() -> int:
    """Print the path of the rank agent, for a job's launcher to run on every rank.

    torchrun --nproc-per-node 8 $(fadoctor rank-script) --out DIR; then fadoctor check --facts-dir DIR
    """
    from fadoctor.distributed.collect import AGENT

    typer.echo(str(AGENT))
    return ExitCode.OK


FLAG = ""  # a flag takes no value: no metavar in --help (typer >= 0.20 would show <bool>)


class FamilyChoice(str, Enum):
    fa2 = "fa2"
    fa3 = "fa3"
    fa4 = "fa4"


@app.command()
@guarded
def fix(
    print_pins: bool = typer.Option(False, "--print-pins", metavar=FLAG, help="Print the "
                                    "install commands: what fix always does (it never runs "
                                    "them)."),
    keep_torch: bool = typer.Option(False, "--keep-torch", metavar=FLAG,
                                    help="Keep the installed torch."),
    torch: Optional[str] = typer.Option(None, "--torch", metavar="VERSION", help="Plan for this "
                                        "torch (2.4, 2.4.0, 2.4.0+cu121)."),
    flash_attn: Optional[str] = typer.Option(None, "--flash-attn", metavar="VERSION",
                                             help="Plan for this flash-attn 2.x version."),
    family: Optional[FamilyChoice] = typer.Option(None, "--family", help="Only this family."),
    python: Optional[str] = typer.Option(None, "--python", metavar="VERSION|PATH",
                                         help="A Python version to plan for (3.11), or the "
                                         "interpreter/environment to examine."),
    gpu_cc: Optional[str] = typer.Option(None, "--gpu-cc", metavar="CC", help="Plan for a GPU "
                                         "of this compute capability (8.0)."),
    driver: Optional[str] = typer.Option(None, "--driver", metavar="VERSION",
                                         help="Plan for this NVIDIA driver (550.54.14)."),
    glibc: Optional[str] = typer.Option(None, "--glibc", metavar="VERSION",
                                        help="Plan for this glibc (2.35)."),
    platform: Optional[str] = typer.Option(None, "--platform", metavar="TAG", help="Plan for "
                                           "this wheel platform tag (linux_x86_64)."),
    no_detect: bool = typer.Option(False, "--no-detect", metavar=FLAG, help="Take nothing from "
                                   "this machine: only the what-if options."),
    fmt: PinFormat = typer.Option(PinFormat.text, "--format", "-f", help="Output format."),
    verbose: bool = typer.Option(False, "--verbose", "-v", metavar=FLAG,
                                 help="Every rejected candidate."),
    matrix_path: Optional[Path] = typer.Option(None, "--matrix", metavar="PATH",
                                               help="Use another compatibility matrix YAML."),
) -> int:
    """Plan the exact install for this machine (or a described one), and print it."""
    from fadoctor.facts import Family
    from fadoctor.fix.render import render_plan
    from fadoctor.fix.solver import Constraints, solve
    from fadoctor.install.machine import WhatIf, apply, from_facts
    from fadoctor.matrix import load_matrix

    target = python if python and (os.sep in python or Path(python).exists()) else None
    version = None if target else python
    if keep_torch and torch:
        raise UsageError("--keep-torch and --torch exclude each other")
    facts = None if no_detect else _collect(target, None, True, [])
    machine = apply(from_facts(facts), WhatIf(gpu_cc=gpu_cc, driver=driver, python=version,
                                              torch=torch, glibc=glibc, platform=platform))
    constraints = Constraints(keep_torch=keep_torch, torch=torch, flash_attn=flash_attn,
                              family=Family(family.value) if family else None)
    plan = solve(machine, constraints, load_matrix(matrix_path))
    _write(Path("-"), render_plan(plan, fmt, verbose))
    return ExitCode.OK


@app.command()
@guarded
def snippet(snippet_id: Optional[str] = typer.Argument(None, metavar="[ID]",
                                                      help="Snippet ID.")) -> int:
    """Print a tested code remedy (the SDPA drop-in, torch.compile controls), or list them."""
    from fadoctor.snippets import SNIPPETS

    if snippet_id is None:
        for s in SNIPPETS:
            typer.echo(f"{s.id:<28} {s.title}")
        return ExitCode.OK
    found = next((s for s in SNIPPETS if s.id == snippet_id), None)
    if found is None:
        raise UsageError(f"no snippet {snippet_id!r}; `fadoctor snippet` lists them")
    typer.echo(found.code.rstrip())
    return ExitCode.OK


@app.command()
@guarded
def explain(check_id: Optional[str] = typer.Argument(None, metavar="[FADxxx]",
                                                     help="Check ID or name.")) -> int:
    """Document a check, or list them all."""
    from fadoctor.checks import ALL_CHECKS, BY_KEY
    from fadoctor.distributed.checks import JOB_BY_KEY, JOB_CHECKS

    if check_id is None:
        for c in ALL_CHECKS:
            typer.echo(f"{c.id}  {c.name:<24} {c.title}")
        for j in JOB_CHECKS:
            typer.echo(f"{j.id}  {j.name:<24} {j.title}")
        return ExitCode.OK
    job_check = JOB_BY_KEY.get(check_id) or JOB_BY_KEY.get(check_id.upper())
    if job_check is not None:  # the job's checks quote no matrix figure
        typer.echo(f"{job_check.id} {job_check.name}: {job_check.title}\n\n{job_check.doc}")
        return ExitCode.OK
    found = BY_KEY.get(check_id) or BY_KEY.get(check_id.upper())
    if found is None:
        raise UsageError(f"no check {check_id!r}; `fadoctor explain` lists them")
    from fadoctor.checks.docs import documentation
    from fadoctor.matrix import load_matrix

    typer.echo(f"{found.id} {found.name}: {found.title}\n\n{documentation(found, load_matrix())}")
    return ExitCode.OK


app.add_typer(matrix_app, name="matrix")


# -- helpers ------------------------------------------------------------------------------------


def _check_ignore(keys: List[str]) -> None:
    from fadoctor.checks import BY_KEY
    from fadoctor.distributed.checks import JOB_BY_KEY

    unknown = [key for key in keys if key not in BY_KEY and key not in JOB_BY_KEY]
    if unknown:
        raise UsageError(f"--ignore {unknown[0]}: no such check (see `fadoctor explain`)")


def _collect(python: Optional[str], timeout: Optional[float], static: bool,
             extensions: List[Path], meanwhile: Callable[[], None] = lambda: None) -> "Facts":
    """Start the probes, run `meanwhile` while they work, and return the facts."""
    from fadoctor.collect import Collection, CollectOptions
    from fadoctor.target.registry import BY_NAME

    for ext in extensions:
        if not ext.is_file():
            raise UsageError(f"--extension {ext}: no such file")
    timeouts = {stage: timeout for stage in BY_NAME} if timeout else {}
    options = CollectOptions(python=python, timeouts=timeouts, static=static,
                             extensions=tuple(str(e.resolve()) for e in extensions))
    if not sys.stderr.isatty():
        collection = Collection(options)
        meanwhile()
        return collection.facts()
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("fadoctor: starting the target interpreter") as status:
        collection = Collection(options, progress=lambda stage: status.update(
            f"fadoctor: {BY_NAME[stage].label}" if stage in BY_NAME else "fadoctor: working"))
        meanwhile()
        return collection.facts()


def _read_facts(path: Path) -> "Facts":
    from pydantic import ValidationError

    from fadoctor.facts import Facts

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read facts file {path}: {exc.strerror or exc}") from exc
    try:
        return Facts.model_validate_json(text)
    except ValidationError as exc:
        from fadoctor.validation import problems

        raise invalid(f"facts file {path}", problems(exc)) from exc


def _emit(report: "Report", fmt: Format, verbose: bool, output: Optional[Path]) -> None:
    from fadoctor.render import render

    _write(output or Path("-"), render(report, fmt, _render_options(fmt, verbose, output)))


def _render_options(fmt: Format, verbose: bool, output: Optional[Path]) -> "RenderOptions":
    from fadoctor.render import RenderOptions

    to_terminal = output is None and sys.stdout.isatty()
    color = to_terminal and fmt == Format.TEXT and "NO_COLOR" not in os.environ
    width = typer.get_terminal_size()[0] if to_terminal else 100
    return RenderOptions(verbose=verbose, width=width, color=color)


def _write(path: Path, text: str) -> None:
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _exit_code(report: "Report", fail_on: FailOn) -> int:
    from fadoctor.report import Category, Severity

    findings = report.findings()
    if any(f.category == Category.INTERNAL and f.severity == Severity.ERROR for f in findings):
        return ExitCode.INTERNAL
    threshold = Severity(fail_on.value).rank
    if any(f.severity.rank >= threshold for f in findings if f.severity != Severity.INFO):
        return ExitCode.PROBLEMS
    return ExitCode.OK


def main() -> None:
    app(prog_name="fadoctor")
