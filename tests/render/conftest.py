"""Shared by the renderer tests: reports of the facts fixtures, evaluated with the shipped matrix."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from fadoctor.evaluate import evaluate
from fadoctor.facts.model import Facts
from fadoctor.matrix import load_matrix
from fadoctor.report import Report

TESTS = Path(__file__).resolve().parents[1]
FACTS_DIR = TESTS / "fixtures" / "facts"


@pytest.fixture(scope="session")
def report_of() -> Callable[[str], Report]:
    """The report of a facts fixture, by name."""
    matrix = load_matrix()

    def build(name: str) -> Report:
        facts = Facts.model_validate_json((FACTS_DIR / f"{name}.json").read_text(encoding="utf-8"))
        return evaluate(facts, matrix)

    return build


@pytest.fixture(scope="session")
def update_golden() -> bool:
    """FADOCTOR_UPDATE_GOLDEN=1 rewrites golden files and schemas instead of comparing."""
    return os.environ.get("FADOCTOR_UPDATE_GOLDEN") == "1"


@pytest.fixture(scope="session")
def compare_or_update(update_golden: bool) -> Callable[[Path, str], None]:
    def check(path: Path, actual: str) -> None:
        if update_golden:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
        assert path.is_file(), f"{path.name} is missing: run with FADOCTOR_UPDATE_GOLDEN=1"
        expected = path.read_text(encoding="utf-8")
        assert actual == expected, (f"{path} differs; if the change is intended, run with "
                                    "FADOCTOR_UPDATE_GOLDEN=1 and review the diff")
    return check
