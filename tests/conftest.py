"""Shared fixtures."""

from __future__ import annotations

from typing import List

import pytest
from tests.helpers.spy import count_worker_starts


@pytest.fixture
def worker_starts(monkeypatch: pytest.MonkeyPatch) -> List[List[str]]:
    """The command line of every worker process started while the test runs (the real ones)."""
    return count_worker_starts(monkeypatch)
