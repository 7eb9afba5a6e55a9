"""The choices the commands offer: output formats of a report (`check`) and of a plan (`fix`),
the severity that fails a run, the kernel set.

Standard library only, so that the command line can name them without importing a renderer.
"""

from __future__ import annotations

from enum import Enum


class Format(str, Enum):
    """How `check` renders a report (fadoctor.render has one renderer per member)."""

    TEXT = "text"
    JSON = "json"
    JUNIT = "junit"
    MARKDOWN = "markdown"
    GITHUB = "github"


class PinFormat(str, Enum):
    """How `fix` prints a plan (fadoctor.fix.render has one renderer per member)."""

    text = "text"
    pip = "pip"
    uv = "uv"
    requirements = "requirements"
    json = "json"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"


class KernelSet(str, Enum):
    default = "default"
    full = "full"
    none = "none"
