"""Callbacks that validate option values before a command runs: a bad value is a usage error
(exit 2, one line), never a traceback deep in the command."""

from __future__ import annotations

from typing import Optional

import typer

MAX_TIMEOUT = 86400.0
# A flag takes no value: an empty metavar keeps --help from showing <bool> (typer >= 0.20).
FLAG = ""


def _seconds(value: Optional[float]) -> Optional[float]:
    """--timeout: a finite number of seconds, 1 to a day (inf or 1e308 would overflow the clock)."""
    if value is not None and not 1 <= value <= MAX_TIMEOUT:  # also refuses nan
        raise typer.BadParameter(f"{value} is not a number of seconds from 1 to {MAX_TIMEOUT:g}")
    return value


def _a_version(value: Optional[str]) -> Optional[str]:
    """An option that names a version: one that parses (PEP 440)."""
    from packaging.version import InvalidVersion, Version

    try:
        if value is not None:
            Version(value)
    except InvalidVersion:
        raise typer.BadParameter(f"{value} is not a version") from None
    return value
