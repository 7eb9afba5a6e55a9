"""fadoctor's own errors and the exit-code contract: one hierarchy, mapped to messages in one place."""

from __future__ import annotations

from enum import IntEnum
from typing import Sequence


class ExitCode(IntEnum):
    OK = 0  # no problem found (at the --fail-on level)
    PROBLEMS = 1  # problems found at or above the --fail-on level
    USAGE = 2  # bad usage or bad input (options, facts file, matrix file)
    INTERNAL = 3  # the doctor itself failed
    OUTPUT = 4  # the report could not be written (stdout closed or broken, disk full)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: the probes were stopped, nothing was concluded


class FadoctorError(Exception):
    """Base of every error fadoctor reports to the user as one line (an invalid file: a line
    per problem)."""

    exit_code = ExitCode.INTERNAL


class UsageError(FadoctorError):
    """The user asked for something that cannot be done as asked."""

    exit_code = ExitCode.USAGE


class InputError(FadoctorError):
    """A file the user gave (facts, matrix) cannot be read or is not valid."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


def invalid(what: str, problems: Sequence[str]) -> InputError:
    """`what` is invalid: its one problem on the line, or every problem on a line of its own."""
    if len(problems) == 1:
        return InputError(f"{what} is invalid: {problems[0]}", problems)
    listed = "".join(f"\n  {p}" for p in problems)
    return InputError(f"{what} is invalid ({len(problems)} problems):{listed}", problems)


class InternalError(FadoctorError):
    """fadoctor contradicted itself or failed."""

    exit_code = ExitCode.INTERNAL


class NoPlanError(FadoctorError):
    """No combination fits the machine and the constraints given: a finding, not bad usage."""

    exit_code = ExitCode.PROBLEMS


class OutputError(FadoctorError):
    """The report could not be delivered: stdout closed, a broken pipe, a full disk."""

    exit_code = ExitCode.OUTPUT


class TargetError(UsageError):
    """The interpreter to examine cannot run fadoctor's worker at all (not Python >= 3.8, not an
    interpreter, or one that never answers): bad input, not a finding about its packages."""
