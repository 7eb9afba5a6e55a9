"""Shared fixtures of the triage tests: the compatibility matrix, loaded once."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix, load_matrix


@pytest.fixture(scope="session")
def matrix() -> Matrix:
    return load_matrix(None)
