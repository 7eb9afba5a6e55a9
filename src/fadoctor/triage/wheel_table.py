"""data/wheel_tags.json read (tools/gen_wheel_tags.py): each distribution's releases on the
package index, with their dates, Requires-Python, source distribution and wheels' tags (pure)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Dict, List, Optional

from fadoctor.triage import data_yaml

Row = List[Any]  # [version, date, requires-python, has sdist, {platform: [pythons]}, glibc]


@lru_cache(maxsize=1)
def table() -> Dict[str, List[Row]]:
    raw = json.loads(data_yaml.path("wheel_tags.json").read_text(encoding="utf-8"))
    packages: Dict[str, List[Row]] = raw["packages"]
    return packages


def newest(dist: str) -> Optional[str]:
    """The newest release of `dist` on the index, where the table lists it."""
    rows = table().get(dist)
    return str(rows[-1][0]) if rows else None
