"""`render(report, format) -> str`: the pure renderer of each `Format`, chosen from `RENDERERS`."""

from __future__ import annotations

from typing import Callable, Dict

from fadoctor.formats import Format
from fadoctor.render.options import RenderOptions
from fadoctor.report import Report


def render(report: Report, fmt: Format, options: RenderOptions = RenderOptions()) -> str:
    """`report` in `fmt`. Text from the examined environment is made inert first (control
    characters and undecodable bytes escaped), whatever the format; each renderer then escapes
    what its own syntax needs."""
    from fadoctor.safety.inert import inert

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
