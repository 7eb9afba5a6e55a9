"""The project's own generated tables (data/*): where a data file is (the installed package's,
else the source tree's), and its YAML read with libyaml's safe loader where PyYAML has it: the
pure-Python loader takes several times longer, and triage reads these tables on every run
(pure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def path(name: str) -> Path:
    """A data file: the installed package's, else the source tree's."""
    packaged = Path(__file__).resolve().parent.parent / "data" / name
    return packaged if packaged.is_file() else Path(__file__).resolve().parents[3] / "data" / name


def load(file: Path) -> Any:
    """A data file's YAML, safely (CSafeLoader is SafeLoader in C)."""
    return yaml.load(file.read_text(encoding="utf-8"),
                     Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
