"""Fixtures for the matrix tests: the shipped matrix, a fresh raw copy to break, and runners that
load or lint a broken copy written to a temporary file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
import yaml

from fadoctor.matrix import Matrix, default_matrix_path, lint_matrix, load_matrix

Raw = Dict[str, Any]
_RAW: Raw = yaml.safe_load(default_matrix_path().read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def matrix() -> Matrix:
    return load_matrix()


@pytest.fixture
def fresh() -> Raw:
    """A deep copy of the shipped matrix as plain YAML data."""
    return copy.deepcopy(_RAW)


def _release(raw: Raw, version: str) -> Raw:
    return next(r for r in raw["flash_attn_releases"] if r["version"] == version)


@pytest.fixture
def release_in() -> Callable[[Raw, str], Raw]:
    """Finds the raw flash_attn_releases entry of a version in a raw copy."""
    return _release


@pytest.fixture
def write_copy(tmp_path: Path) -> Callable[[Raw], Path]:
    def write(data: Raw) -> Path:
        path = tmp_path / "compat_matrix.yaml"
        # JSON is YAML, and far quicker to write than yaml.safe_dump for a matrix this size.
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
        return path

    return write


@pytest.fixture
def lint_copy(write_copy: Callable[[Raw], Path]) -> Callable[[Raw], List[str]]:
    """Every problem lint finds in a copy (it must find at least one)."""

    def lint(data: Raw) -> List[str]:
        problems = lint_matrix(write_copy(data))
        assert problems, "the broken copy was accepted"
        return problems

    return lint
