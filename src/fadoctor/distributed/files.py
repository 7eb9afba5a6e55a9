"""Telling a job's facts file from one environment's, cheaply: `check` decides before it imports
the models, so that the worker of a plain check still starts first."""

from __future__ import annotations

from pathlib import Path
from typing import Optional


def is_job_file(path: Optional[Path]) -> bool:
    """Whether a --facts file holds a whole job (`snapshot --distributed`), not one environment."""
    if path is None or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as fh:
            head = fh.read(200)
    except (OSError, UnicodeDecodeError):
        return False
    return '"kind": "distributed"' in head or '"kind":"distributed"' in head
