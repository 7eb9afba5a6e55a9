"""The project's own generated tables (data/*.yaml) read with libyaml's safe loader where PyYAML
has it: the pure-Python loader takes several times longer, and triage reads these tables on every
run (pure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def load(path: Path) -> Any:
    """A data file's YAML, safely (CSafeLoader is SafeLoader in C)."""
    return yaml.load(path.read_text(encoding="utf-8"),
                     Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
