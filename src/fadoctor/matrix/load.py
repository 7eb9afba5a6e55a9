"""Load and validate the compatibility matrix (YAML, safe_load) into `Matrix`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, List, Optional

from pydantic import ValidationError

from fadoctor.errors import InputError, invalid
from fadoctor.facts.validation import problems
from fadoctor.matrix.dated import default_matrix_path as default_matrix_path
from fadoctor.matrix.models import Matrix
from fadoctor.safety.textfile import read_bytes, read_text, shown


def twin_path(path: Path) -> Path:
    """The compiled twin of a matrix YAML: the same data as JSON, with the YAML's digest."""
    return path.with_suffix(".json")


def write_twin(path: Path) -> Path:
    """Compile the YAML at `path` into its twin, after the full validation (`lint`) passes."""
    problems_found = lint_matrix(path)
    if problems_found:
        raise invalid(f"matrix {shown(path)}", problems_found)
    twin = twin_path(path)
    body = {"yaml_sha256": _digest(path), "matrix": _read(path)}
    twin.write_text(json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n",
                    encoding="utf-8")
    return twin


def load_matrix(path: Optional[Path] = None) -> Matrix:
    """The matrix at `path` (default: the shipped one). Its compiled twin is read instead of
    the YAML when its digest says it is the same data: JSON parses in a tenth of the time, and
    the cross-entry checks ran when the twin was written (a YAML parse and those checks cost
    ~0.5 s, which would be most of `fadoctor check` where torch is absent)."""
    path = path or default_matrix_path()
    twin = _read_twin(path)
    if twin is not None:
        return Matrix.model_validate(twin, context={"trusted": True})
    raw = _read(path)
    try:
        matrix = Matrix.model_validate(raw)
    except ValidationError as exc:
        raise invalid(f"matrix {shown(path)}", problems(exc, raw)) from exc
    found = cross_entry_problems(matrix)
    if found:
        raise invalid(f"matrix {shown(path)}", found)
    return matrix


def lint_matrix(path: Optional[Path] = None) -> List[str]:
    """Every problem of the matrix at `path`, one line each naming the entry ([] when valid).
    Always the YAML, with every check. A file that cannot be read or is not YAML raises
    InputError."""
    raw = _read(path or default_matrix_path())
    try:
        matrix = Matrix.model_validate(raw)
    except ValidationError as exc:
        return problems(exc, raw)
    return cross_entry_problems(matrix)


def cross_entry_problems(matrix: Matrix) -> List[str]:
    """The cross-entry invariants' problems, worded as a validation error of the whole document
    is (they run once every entry is valid on its own). Only the YAML is checked: the compiled
    twin was checked when it was written."""
    from fadoctor.matrix.invariants import INVARIANTS

    return [f"(top level): {p}".replace("\n", " ") for invariant in INVARIANTS for p in invariant(matrix)]


def _digest(path: Path) -> str:
    return hashlib.sha256(read_bytes(path, "matrix")).hexdigest()


def _read_twin(path: Path) -> Any:
    """The twin's data if it is the twin of exactly this YAML, else None."""
    try:
        body = json.loads(read_bytes(twin_path(path), "matrix twin"))
    except (InputError, ValueError, RecursionError):
        return None
    if not isinstance(body, dict) or body.get("yaml_sha256") != _digest(path):
        return None
    return body.get("matrix")


def _read(path: Path) -> Any:
    import yaml  # only the YAML needs it: the compiled twin is what loads (~60 ms saved)

    text = read_text(path, "matrix")
    try:
        # CSafeLoader is the same safe loader, in C, when libyaml is there.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(text, Loader=loader)
    except (yaml.YAMLError, RecursionError) as exc:
        raise InputError(f"matrix {shown(path)} is not valid YAML: {exc}".replace("\n", " ")
                         ) from exc
