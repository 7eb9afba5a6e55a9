"""Load and validate the compatibility matrix (YAML, safe_load) into `Matrix`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import yaml
from pydantic import ValidationError

from fadoctor.errors import InputError
from fadoctor.matrix.models import Matrix

_PACKAGED = Path(__file__).resolve().parent.parent / "data" / "compat_matrix.yaml"
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "data" / "compat_matrix.yaml"


def default_matrix_path() -> Path:
    """The matrix shipped in the wheel, or data/ of a source checkout (editable installs)."""
    return _PACKAGED if _PACKAGED.is_file() else _SOURCE_TREE


def load_matrix(path: Optional[Path] = None) -> Matrix:
    path = path or default_matrix_path()
    try:
        # CSafeLoader is the same safe loader, in C, when libyaml is there.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except OSError as exc:
        raise InputError(f"cannot read matrix {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"matrix {path} is not valid YAML: {exc}".replace("\n", " ")) from exc
    try:
        return Matrix.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"matrix {path} is invalid: {_first_error(exc)}") from exc


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"
