"""The output formats the commands offer: of a report (`check`) and of a plan (`fix`).

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
