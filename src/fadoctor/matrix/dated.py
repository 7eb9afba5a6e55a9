"""Where the shipped matrix lives and the date of its data, read without YAML or pydantic (so
`fadoctor --version` stays instant)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

_PACKAGED = Path(__file__).resolve().parent.parent / "data" / "compat_matrix.yaml"
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "data" / "compat_matrix.yaml"
_DATE = re.compile(r'^data_date:\s*"?(\d{4}-\d{2}-\d{2})"?\s*$', re.M)


def default_matrix_path() -> Path:
    """The matrix shipped in the wheel, or data/ of a source checkout (editable installs)."""
    return _PACKAGED if _PACKAGED.is_file() else _SOURCE_TREE


def data_date(path: Optional[Path] = None) -> Optional[str]:
    """The matrix's `data_date` (YYYY-MM-DD), or None when it has none or cannot be read."""
    try:
        text = (path or default_matrix_path()).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = _DATE.search(text)
    return found.group(1) if found else None
