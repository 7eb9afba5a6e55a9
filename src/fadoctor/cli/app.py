"""The command line: thin typer commands over collect -> evaluate -> render, and the one error map.

Heavy modules (pydantic models, the matrix, rich) are imported inside the commands so that
`fadoctor --help` probes nothing and starts fast.
"""

import os
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable, List, Optional

import typer

from fadoctor import __version__
from fadoctor.cli import jobs
from fadoctor.cli.bench import bench_command
from fadoctor.cli.guard import DEBUG, guarded
from fadoctor.cli.help import (
    COMPILE_HELP,
    DISTRIBUTED_HELP,
    EXTENSION_HELP,
    FACTS_DIR_HELP,
    KERNELS_HELP,
    ONLY_HELP,
    PYTHON_HELP,
    REDACT_HELP,
    STATIC_HELP,
    TIMEOUT_HELP,
)
from fadoctor.cli.inputs import (
    _check_extension,
    _check_ignore,
    _check_only_ignore,
    _named_binaries,
    _read_facts,
    _redacted,
)
from fadoctor.cli.matrix import matrix_app
from fadoctor.cli.model import model as model_command
from fadoctor.cli.options import FLAG, _a_version, _seconds
from fadoctor.cli.triage import triage_command
from fadoctor.distributed.args import JobArgs, Reporting, is_job_file
from fadoctor.errors import ExitCode, UsageError
from fadoctor.formats import FailOn, Format, KernelSet, PinFormat

if TYPE_CHECKING:
    from fadoctor.facts.model import Facts
    from fadoctor.matrix import Matrix
    from fadoctor.probes.kernels import KernelOptions
    from fadoctor.report import Report

app = typer.Typer(
    name="fadoctor",
    help="A compatibility doctor for PyTorch + flash-attention environments.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if value:
        _write(Path("-"), f"fadoctor {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", metavar=FLAG,
                                 callback=_version_callback,
                                 is_eager=True, help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", metavar=FLAG,
                               help="Show tracebacks of fadoctor's own errors."),
) -> None:
    """Examine the environment you train in and say whether flash-attention will work there."""
    DEBUG["on"] = debug


# The options check and snapshot share (one definition each, one help text).
PYTHON_OPTION = typer.Option(None, "--python", metavar="PATH", help=PYTHON_HELP)
TIMEOUT_OPTION = typer.Option(None, "--timeout", metavar="SECONDS", help=TIMEOUT_HELP,
                              callback=_seconds)
STATIC_OPTION = typer.Option(False, "--static", metavar=FLAG, help=STATIC_HELP)
EXTENSION_OPTION = typer.Option([], "--extension", metavar="PATH", help=EXTENSION_HELP)
KERNELS_OPTION = typer.Option(None, "--kernels", help=KERNELS_HELP)
COMPILE_OPTION = typer.Option(False, "--compile", metavar=FLAG, help=COMPILE_HELP)
REDACT_OPTION = typer.Option(False, "--redact", metavar=FLAG, help=REDACT_HELP)
DISTRIBUTED_OPTION = typer.Option(False, "--distributed", metavar=FLAG,
                                  help=DISTRIBUTED_HELP)
FACTS_DIR_OPTION = typer.Option(None, "--facts-dir", metavar="DIR", help=FACTS_DIR_HELP)


@app.command()
@guarded
def check(
    python: Optional[str] = PYTHON_OPTION,
    facts_file: Optional[Path] = typer.Option(None, "--facts", metavar="PATH",
                                              help="Diagnose a facts file "
                                              "(from `fadoctor snapshot`) instead of this machine."),
    fmt: Format = typer.Option(Format.TEXT, "--format", "-f", help="Output format."),
    verbose: bool = typer.Option(False, "--verbose", "-v", metavar=FLAG,
                                 help="Show passed checks' details "
                                 "and the evidence behind each finding."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding of "
                                   "this severity or worse is found."),
    ignore: List[str] = typer.Option([], "--ignore", metavar="CHECK",
                                     help="Check ID or name to skip "
                                     "(repeatable)."),
    only: List[str] = typer.Option([], "--only", metavar="CHECK",
                                   help=ONLY_HELP),
    matrix_path: Optional[Path] = typer.Option(None, "--matrix", metavar="PATH",
                                               help="Use another "
                                               "compatibility matrix YAML."),
    timeout: Optional[float] = TIMEOUT_OPTION,
    static: bool = STATIC_OPTION,
    extension: List[Path] = EXTENSION_OPTION,
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="PATH",
                                          help="Write the report to a "
                                          "file instead of stdout."),
    kernels: Optional[KernelSet] = KERNELS_OPTION,
    compile_: bool = COMPILE_OPTION,
    model: Optional[str] = typer.Option(None, "--model", metavar="CONFIG",
                                        help="Also check this model "
                                        "(config.json, folder or shipped name) and its training "
                                        "memory."),
    model_plan: Optional[str] = typer.Option(None, "--model-plan", metavar="FILE",
                                             help="The training plan for "
                                             "--model: method=full|lora|qlora,batch=N,seq=N,"
                                             "checkpointing=true,recipe=bf16|mixed,lora_r=N."),
    redact: bool = REDACT_OPTION,
    distributed: bool = DISTRIBUTED_OPTION,
    facts_dir: Optional[Path] = FACTS_DIR_OPTION,
) -> int:
    """Check the target environment (or a facts file) and print the diagnosis."""
    if distributed or facts_dir is not None or is_job_file(facts_file):  # a whole job
        if model_plan is not None:
            raise UsageError("--model-plan applies with --model, to one environment")
        return jobs.job_check(
            JobArgs(distributed, facts_dir, facts_file, python, timeout, kernels, static,
                    extension, compile_, model),
            Reporting(fmt, verbose, ignore, only, matrix_path, output, redact),
            lambda text: _write(output or Path("-"), text),
            lambda report: _exit_code(report, fail_on))
    if facts_file is not None and (python is not None or static or extension or kernels
                                   or compile_):
        raise UsageError("--facts diagnoses saved facts: --python, --static, --extension, "
                         "--kernels and --compile apply when probing")
    if model_plan is not None and model is None:
        raise UsageError("--model-plan is the training plan for --model: give --model too")
    if ignore or only:
        _check_ignore([*ignore, *only], "--only" if only and not ignore else "--ignore")
        _check_only_ignore(only, ignore)
    loaded: List[Matrix] = []

    def load() -> None:  # runs while the target interpreter imports torch
        from fadoctor.matrix import load_matrix

        loaded.append(load_matrix(matrix_path))

    if facts_file is not None:
        facts = _read_facts(facts_file)
        load()
    else:
        facts = _collect(python, timeout, static, extension, meanwhile=load,
                         kernels=_kernels(kernels, compile_))
    from fadoctor.checks import ALL_CHECKS, BY_KEY
    from fadoctor.evaluate import evaluate

    if only and extension:
        facts = _named_binaries(facts, extension)
    selected = {BY_KEY[k].id for k in only}
    left_out = {BY_KEY[k].id for k in ignore} | {c.id for c in ALL_CHECKS if selected
                                                  and c.id not in selected}
    wanted = None
    if model is not None:
        from fadoctor.cli.model import model_facts

        wanted = model_facts(model, model_plan)
    report = evaluate(facts, loaded[0], ignore=left_out, model=wanted)
    _emit(report, fmt, verbose, output, redact)
    return _exit_code(report, fail_on)


@app.command()
@guarded
def snapshot(
    output: Path = typer.Option(..., "--output", "-o", metavar="PATH",
                                help="Where to write the facts JSON "
                                "('-' for stdout)."),
    python: Optional[str] = PYTHON_OPTION,
    timeout: Optional[float] = TIMEOUT_OPTION,
    static: bool = STATIC_OPTION,
    extension: List[Path] = EXTENSION_OPTION,
    kernels: Optional[KernelSet] = KERNELS_OPTION,
    compile_: bool = COMPILE_OPTION,
    redact: bool = REDACT_OPTION,
    distributed: bool = DISTRIBUTED_OPTION,
    facts_dir: Optional[Path] = FACTS_DIR_OPTION,
) -> int:
    """Save the facts about the target environment, to diagnose elsewhere with `check --facts`."""
    if distributed or facts_dir is not None:  # a whole job's facts, written by rank 0
        return jobs.job_snapshot(JobArgs(distributed, facts_dir, None, python, timeout,
                                         kernels, static, extension, compile_),
                                 lambda text: _write(output, text), redact)
    from fadoctor.facts.files import dumps

    facts = _collect(python, timeout, static, extension, kernels=_kernels(kernels, compile_))
    _write(output, dumps(_redacted(facts, redact)))  # on the values: the JSON stays JSON
    return ExitCode.OK




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
                                             help="Plan for this flash-attn 2.x version.",
                                             callback=_a_version),
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
    from fadoctor.facts.model import Family
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
    from fadoctor.safety.inert import visible

    _write(Path("-"), visible(render_plan(plan, fmt, verbose)))  # a GPU's name is the target's
    return ExitCode.OK


@app.command()
@guarded
def snippet(snippet_id: Optional[str] = typer.Argument(None, metavar="[ID]",
                                                      help="Snippet ID.")) -> int:
    """Print a tested code remedy (the SDPA drop-in, torch.compile controls), or list them."""
    from fadoctor.snippets import SNIPPETS

    if snippet_id is None:
        for s in SNIPPETS:
            _write(Path("-"), f"{s.id:<28} {s.title}\n")
        return ExitCode.OK
    found = next((s for s in SNIPPETS if s.id == snippet_id), None)
    if found is None:
        raise UsageError(f"no snippet {snippet_id!r}; `fadoctor snippet` lists them")
    _write(Path("-"), found.code.rstrip() + "\n")
    return ExitCode.OK


@app.command()
@guarded
def explain(check_id: Optional[str] = typer.Argument(None, metavar="[FADxxx]",
                                                     help="Check ID or name.")) -> int:
    """Document a check, or list them all."""
    from fadoctor.distributed.checks import EVERY_CHECK, EVERY_KEY

    if check_id is None:
        for c in EVERY_CHECK:
            _write(Path("-"), f"{c.id}  {c.name:<24} {c.title}\n")
        return ExitCode.OK
    found = EVERY_KEY.get(check_id) or EVERY_KEY.get(check_id.upper())
    if found is None:
        raise UsageError(f"no check {check_id!r}; `fadoctor explain` lists them")
    from fadoctor.checks.docs import documentation
    from fadoctor.matrix import load_matrix

    _write(Path("-"), f"{found.id} {found.name}: {found.title}\n\n"
                      f"{documentation(found, load_matrix())}\n")
    return ExitCode.OK


app.command("bench")(bench_command)
app.command("rank-script")(guarded(jobs.rank_script_command))
app.command("triage")(guarded(triage_command))
app.add_typer(matrix_app, name="matrix")
app.command(name="model")(guarded(model_command))


# -- helpers ------------------------------------------------------------------------------------


def _kernels(kernels: Optional[KernelSet], compile_: bool) -> "KernelOptions":
    from fadoctor.probes.kernels import KernelOptions

    return KernelOptions(smoke=(kernels or KernelSet.default).value, compile=compile_)


def _collect(python: Optional[str], timeout: Optional[float], static: bool,
             extensions: List[Path], meanwhile: Callable[[], None] = lambda: None,
             kernels: Optional["KernelOptions"] = None) -> "Facts":
    """Start the probes, run `meanwhile` while they work, and return the facts."""
    from fadoctor.collect.run import Collection
    from fadoctor.collect.target import CollectOptions
    from fadoctor.in_target.registry import BY_NAME
    from fadoctor.probes.kernels import KernelOptions

    for ext in extensions:
        _check_extension(ext)
    timeouts = {stage: timeout for stage in BY_NAME} if timeout else {}
    options = CollectOptions(python=python, timeouts=timeouts, static=static,
                             extensions=tuple(str(e.resolve()) for e in extensions),
                             kernels=kernels or KernelOptions())
    from fadoctor.cli.output import terminal

    if not terminal(2):  # a log, a pipe, TERM=dumb: no spinner
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


def _emit(report: "Report", fmt: Format, verbose: bool, output: Optional[Path],
          redact: bool = False) -> None:
    from fadoctor.cli.output import colour, terminal, width
    from fadoctor.render.dispatch import render
    from fadoctor.render.options import RenderOptions

    to_terminal = output is None and terminal(1)
    color = to_terminal and fmt == Format.TEXT and colour(1)
    columns = width(100) if output is None else 100
    text = render(_redacted(report, redact), fmt, RenderOptions(verbose=verbose, width=columns,
                                                                color=color))
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


def main() -> None:
    from fadoctor.cli.guard import run

    run(app)
