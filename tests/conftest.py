"""Shared fixtures, and the modules that need a real torch to be collected at all."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import List, Optional

import pytest
from tests.helpers.spy import count_worker_starts

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def imports_torch_at_top(path: Path) -> bool:
    """Whether the module imports torch at module level (executed at collection, not in a test)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in tree.body:
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
            return True
        if (isinstance(node, ast.ImportFrom) and node.level == 0
                and (node.module or "").split(".")[0] == "torch"):
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> Optional[bool]:
    """Without torch (a Python that torch has no wheel for, such as the oldest fadoctor supports),
    a test module that imports it at the top is not collected; its tests examine a real torch."""
    if HAVE_TORCH or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if imports_torch_at_top(collection_path) else None


@pytest.fixture
def worker_starts(monkeypatch: pytest.MonkeyPatch) -> List[List[str]]:
    """The command line of every worker process started while the test runs (the real ones)."""
    return count_worker_starts(monkeypatch)
