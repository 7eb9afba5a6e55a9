"""The one error map of every command: fadoctor's errors become one line on stderr and their
exit code; anything else is an internal error (exit 3), with the traceback only under --debug."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import typer

from fadoctor.errors import ExitCode, FadoctorError

DEBUG = {"on": False}


def guarded(command: Callable[..., int]) -> Callable[..., None]:
    """The one error map: fadoctor errors become one line on stderr and their exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            code = int(command(*args, **kwargs))
        except FadoctorError as exc:
            if DEBUG["on"]:
                raise
            sys.stderr.write(f"fadoctor: error: {exc}\n")
            code = int(exc.exit_code)
        except KeyboardInterrupt:
            sys.stderr.write("fadoctor: interrupted\n")
            code = 130
        except Exception as exc:
            if DEBUG["on"]:
                raise
            sys.stderr.write(f"fadoctor: internal error: {type(exc).__name__}: {exc} "
                             "(run with --debug for the traceback)\n")
            code = int(ExitCode.INTERNAL)
        raise typer.Exit(code)

    return wrapper
