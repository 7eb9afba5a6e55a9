"""The compatibility matrix: sourced YAML data, its schema, and queries over it.

The names below are loaded on first use, so that importing the package (as the CLI does to
register `fadoctor matrix`) costs nothing until a command needs the matrix.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fadoctor.matrix.load import default_matrix_path, lint_matrix, load_matrix
    from fadoctor.matrix.models import Matrix

__all__ = ["Matrix", "default_matrix_path", "lint_matrix", "load_matrix"]

_HOME = {"Matrix": "fadoctor.matrix.models", "default_matrix_path": "fadoctor.matrix.load",
         "lint_matrix": "fadoctor.matrix.load", "load_matrix": "fadoctor.matrix.load"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
