"""fadoctor's own errors and the exit-code contract: one hierarchy, mapped to messages in one place."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # no problem found (at the --fail-on level)
    PROBLEMS = 1  # problems found at or above the --fail-on level
    USAGE = 2  # bad usage or bad input (options, facts file, matrix file)
    INTERNAL = 3  # the doctor itself failed
    OUTPUT = 4  # the report could not be written (stdout closed or broken, disk full)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: the probes were stopped, nothing was concluded


class FadoctorError(Exception):
    """Base of every error fadoctor reports to the user as one line."""

    exit_code = ExitCode.INTERNAL


class UsageError(FadoctorError):
    """The user asked for something that cannot be done as asked."""

    exit_code = ExitCode.USAGE


class InputError(FadoctorError):
    """A file the user gave (facts, matrix) cannot be read or is not valid."""

    exit_code = ExitCode.USAGE


class InternalError(FadoctorError):
    """fadoctor contradicted itself or failed."""

    exit_code = ExitCode.INTERNAL


class NoPlanError(FadoctorError):
    """No combination fits the machine and the constraints given: a finding, not bad usage."""

    exit_code = ExitCode.PROBLEMS


class OutputError(FadoctorError):
    """The report could not be delivered: stdout closed, a broken pipe, a full disk."""

    exit_code = ExitCode.OUTPUT
