"""JSON: the report model as is (its JSON Schema is checked in under schemas/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fadoctor.report import Report

if TYPE_CHECKING:
    from fadoctor.render.options import RenderOptions


def render_json(report: Report, options: RenderOptions) -> str:
    return report.model_dump_json(indent=2) + "\n"
