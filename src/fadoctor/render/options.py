"""How a report is rendered: the options every renderer takes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderOptions:
    verbose: bool = False
    width: int = 100
    color: bool = False
    # Wrap long lines at word boundaries with a hanging indent, at `width` held to 60-120
    # columns (a terminal's output); off, each line is whole (files, pipes, golden files).
    # Commands are never wrapped: each stays one line to copy.
    wrap: bool = False
