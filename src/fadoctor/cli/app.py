"""The command line: thin typer commands over collect -> evaluate -> render, and the one error map.

Heavy modules (pydantic models, the matrix, rich) are imported inside the commands so that
`fadoctor --help` probes nothing and starts fast.
"""

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from fadoctor.cli import jobs
from fadoctor.cli.bench import bench_command
from fadoctor.cli.common import _collect, _emit, _exit_code, _write
from fadoctor.cli.compat import compat_app
from fadoctor.cli.docs import explain, snippet
from fadoctor.cli.early import kernel_options
from fadoctor.cli.fix import fix
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
    _check_ignore,
    _check_only_ignore,
    _named_binaries,
    _read_facts,
    _redacted,
)
from fadoctor.cli.matrix import matrix_app
from fadoctor.cli.model import model as model_command
from fadoctor.cli.options import FLAG, _seconds
from fadoctor.cli.triage import triage_command
from fadoctor.cli.version import version_text
from fadoctor.distributed.args import JobArgs, Reporting, is_job_file
from fadoctor.errors import ExitCode, UsageError
from fadoctor.formats import FailOn, Format, KernelSet

if TYPE_CHECKING:
    from fadoctor.matrix import Matrix

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
        _write(Path("-"), version_text())
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
    model_plan: Optional[str] = typer.Option(None, "--model-plan", metavar="KEY=VALUE,...",
                                             help="The training plan for --model, comma-"
                                             "separated: method=full|lora|qlora, batch=N, seq=N, "
                                             "checkpointing=true, recipe=bf16|mixed, lora_r=N."),
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
                         kernels=kernel_options(kernels, compile_))
    from fadoctor.checks import ALL_CHECKS, BY_KEY, MODEL_CHECKS
    from fadoctor.evaluate import evaluate

    if only and extension:
        facts = _named_binaries(facts, extension)
    selected = {BY_KEY[k].id for k in only}
    left_out = {BY_KEY[k].id for k in ignore} | {c.id for c in ALL_CHECKS + MODEL_CHECKS
                                                  if selected and c.id not in selected}
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

    facts = _collect(python, timeout, static, extension, kernels=kernel_options(kernels, compile_))
    _write(output, dumps(_redacted(facts, redact)))  # on the values: the JSON stays JSON
    return ExitCode.OK


app.command()(fix)
app.command()(snippet)
app.command()(explain)
app.command("bench")(bench_command)
app.command("rank-script")(guarded(jobs.rank_script_command))
app.command("triage")(guarded(triage_command))
app.add_typer(matrix_app, name="matrix")
app.add_typer(compat_app, name="compat")
app.command(name="model")(guarded(model_command))
