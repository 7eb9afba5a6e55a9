"""Shared by the checks' tests: the facts builders and the generator in tests/fixtures/."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fadoctor.matrix import Matrix, load_matrix

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def load_fixture_module(name: str) -> ModuleType:
    """Import tests/fixtures/<name>.py by path (the fixtures folder is not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # make_facts imports facts_factory by this name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def build() -> ModuleType:
    """The facts builders (tests/fixtures/facts_factory.py)."""
    return load_fixture_module("facts_factory")


@pytest.fixture(scope="session")
def generator() -> ModuleType:
    """The fixture generator (tests/fixtures/make_facts.py)."""
    load_fixture_module("facts_factory")
    return load_fixture_module("make_facts")


@pytest.fixture(scope="session")
def matrix() -> Matrix:
    """The matrix fadoctor ships."""
    return load_matrix()
