"""How a report is rendered: the options every renderer takes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderOptions:
    verbose: bool = False
    width: int = 100
    color: bool = False
