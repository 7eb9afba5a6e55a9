"""`render(report, format) -> str`: the pure renderer of each `Format`, chosen from `RENDERERS`."""

from __future__ import annotations

import importlib
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


def _lazy(module: str, name: str) -> Callable[[Report, RenderOptions], str]:
    """The renderer `name` of `fadoctor.render.<module>`, imported when it first renders: a run
    renders one format, and junit's XML or markdown's tables need not load for the others."""

    def renderer(report: Report, options: RenderOptions) -> str:
        found: Callable[[Report, RenderOptions], str] = getattr(
            importlib.import_module(f"fadoctor.render.{module}"), name)
        return found(report, options)

    return renderer


RENDERERS: Dict[Format, Callable[[Report, RenderOptions], str]] = {
    Format.TEXT: _lazy("text", "render_text"),
    Format.JSON: _lazy("json_", "render_json"),
    Format.JUNIT: _lazy("junit", "render_junit"),
    Format.MARKDOWN: _lazy("markdown", "render_markdown"),
    Format.GITHUB: _lazy("github", "render_github"),
}
