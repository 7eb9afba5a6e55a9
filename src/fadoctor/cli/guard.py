"""The one error map of every command: fadoctor's errors and click's usage errors become one line
on stderr and their exit code; anything else is an internal error (exit 3), with the traceback
only under --debug."""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any, Callable, NoReturn

import typer

from fadoctor.cli.early import stop_on_signals
from fadoctor.cli.helpdraw import flag_help, fold_long_words
from fadoctor.cli.output import adopt_standard_streams, say, silence_stdout, write
from fadoctor.errors import ExitCode, FadoctorError, InputError, OutputError
from fadoctor.safety.textfile import READ

DEBUG = {"on": False}


def guarded(command: Callable[..., int]) -> Callable[..., None]:
    """The one error map: fadoctor errors become one line on stderr and their exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        READ.clear()  # the inputs of this command alone (tests run several in one process)
        try:
            code = int(command(*args, **kwargs))
        except FadoctorError as exc:
            if DEBUG["on"]:
                raise
            error(exc)
            code = int(exc.exit_code)
        except KeyboardInterrupt:
            say("fadoctor: interrupted")
            code = int(ExitCode.INTERRUPTED)
        except Exception as exc:
            if DEBUG["on"]:
                raise
            say(f"fadoctor: internal error: {type(exc).__name__}: {exc} (run with --debug for "
                "the traceback)")
            code = int(ExitCode.INTERNAL)
        raise typer.Exit(code)

    return wrapper


def error(exc: FadoctorError) -> None:
    """`fadoctor: error: …` on one line; an invalid file's problems each on a line below it."""
    head, *rest = str(exc).split("\n") if isinstance(exc, InputError) and len(exc.problems) > 1 \
        else [str(exc)]
    say(f"fadoctor: error: {head}")
    for line in rest:
        say(line)


def _click_exceptions() -> Any:
    """click's exceptions module: vendored by recent typer, the click package before."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:
        return importlib.import_module("click.exceptions")


def run(app: typer.Typer) -> NoReturn:
    """Run the CLI. A usage error is one `fadoctor: error:` line and exit 2 (click would draw a
    box of several lines); a bare `fadoctor` prints the help."""
    adopt_standard_streams()
    stop_on_signals()
    try:
        code = _invoke(app)
    except FadoctorError as exc:  # the help or --version could not be written
        error(exc)
        code = int(exc.exit_code)
    sys.exit(code)


def _invoke(app: typer.Typer) -> int:
    click = _click_exceptions()
    # click < 8.2 prints the help of a bare command itself; later ones raise this for it.
    no_args: Any = getattr(click, "NoArgsIsHelpError", ())
    try:
        command = typer.main.get_command(app)
        flag_help(command)
        return int(command(prog_name="fadoctor", standalone_mode=False) or 0)
    except no_args as exc:
        fold_long_words()
        write(exc.format_message() + "\n")
        return int(ExitCode.USAGE)
    except click.ClickException as exc:
        say(f"fadoctor: error: {exc.format_message()}")
        return int(exc.exit_code)
    except typer.Abort:  # Ctrl-C or end of input at a prompt
        say("fadoctor: interrupted")
        return int(ExitCode.INTERRUPTED)
    except OSError as exc:  # click printing the help (commands are `guarded`)
        silence_stdout()
        raise OutputError(f"cannot write to stdout: {exc.strerror or exc}") from None
