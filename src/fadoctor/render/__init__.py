"""Renderers: pure `Report -> str` functions, chosen by `Format`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict

from fadoctor.formats import Format
from fadoctor.report import Report

__all__ = ["RENDERERS", "Format", "RenderOptions", "render"]


@dataclass(frozen=True)
class RenderOptions:
    verbose: bool = False
    width: int = 100
    color: bool = False


def render(report: Report, fmt: Format, options: RenderOptions = RenderOptions()) -> str:
    """`report` in `fmt`. Text from the examined environment is made inert first (control
    characters and undecodable bytes escaped), whatever the format; each renderer then escapes
    what its own syntax needs."""
    from fadoctor.inert import inert

    return RENDERERS[fmt](inert(report), options)


def _renderers() -> Dict[Format, Callable[[Report, RenderOptions], str]]:
    from fadoctor.render import github, json_, junit, markdown, text

    return {
        Format.TEXT: text.render_text,
        Format.JSON: json_.render_json,
        Format.JUNIT: junit.render_junit,
        Format.MARKDOWN: markdown.render_markdown,
        Format.GITHUB: github.render_github,
    }


RENDERERS = _renderers()
