"""Rendered reports of a few fixtures, in every format, against reviewed golden files."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Tuple

import pytest

from fadoctor.formats import Format
from fadoctor.render.dispatch import render
from fadoctor.render.options import RenderOptions
from fadoctor.report import Report

GOLDEN = Path(__file__).resolve().parents[1] / "golden"

# An import failure with remedies; a GPU torch has no kernels for (with skipped checks); warnings
# only, with install hints; a GPU flash-attention refuses, with SDPA's own reasons.
FIXTURES = ("fa853-cxx11abi-true-wheel-on-pip-torch", "rtx5090-torch-cu126",
            "h100-torch211-cu130-no-fa", "t4-fa2-installed")

# golden file -> (format, options); text at a pinned width, without colour.
VARIANTS: Dict[str, Tuple[Format, RenderOptions]] = {
    "text.txt": (Format.TEXT, RenderOptions(width=100, color=False)),
    "text-verbose.txt": (Format.TEXT, RenderOptions(width=100, color=False, verbose=True)),
    # as a terminal of 80 columns draws it: prose wrapped with a hanging indent, commands whole
    "text-wrapped-80.txt": (Format.TEXT, RenderOptions(width=80, color=False, verbose=True,
                                                       wrap=True)),
    "report.json": (Format.JSON, RenderOptions()),
    "junit.xml": (Format.JUNIT, RenderOptions()),
    "report.md": (Format.MARKDOWN, RenderOptions()),
    "report-verbose.md": (Format.MARKDOWN, RenderOptions(verbose=True)),
    "github.txt": (Format.GITHUB, RenderOptions()),
}


def test_the_variants_cover_every_format() -> None:
    assert {fmt for fmt, _ in VARIANTS.values()} == set(Format)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("name", FIXTURES)
def test_golden(name: str, variant: str, report_of: Callable[[str], Report],
                compare_or_update: Callable[[Path, str], None]) -> None:
    fmt, options = VARIANTS[variant]
    compare_or_update(GOLDEN / name / variant, render(report_of(name), fmt, options))


def test_no_stray_golden_files() -> None:
    expected = {GOLDEN / name / variant for name in FIXTURES for variant in VARIANTS}
    assert set(GOLDEN.glob("*/*")) <= expected
