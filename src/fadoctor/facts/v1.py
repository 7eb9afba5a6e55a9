"""Reading version-1 facts files: the claims version 1 made by default, written out for version 2.

In version 1 a field the probe left out took a default that was a claim (`cuda_available` False,
`arch_list` and `devices` empty); version 2 reads an absent field as unknown. Every version-1
file came from fadoctor's own probes, so its defaults were what the probe saw: they are filled
in, and the file is read as version 2.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping

# Per probe of a version-1 file: the fields whose default changed, and the version-1 default.
_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "host": {"environment": {}},
    "driver": {"gpus": []},
    "torch": {"arch_list": [], "cuda_available": False, "device_count": 0, "devices": [],
              "sdpa": []},
}


def upgrade(data: Any) -> Any:
    """A version-1 facts document as version 2; anything else unchanged."""
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        return data
    out: Dict[str, Any] = copy.deepcopy(data)
    for probe, defaults in _DEFAULTS.items():
        fields = _probe_data(out, probe)
        if fields is not None:
            for name, value in defaults.items():
                fields.setdefault(name, copy.deepcopy(value))
    packages = _probe_data(out, "packages")
    for dist in (packages or {}).get("distributions") or []:
        if isinstance(dist, dict):
            dist.setdefault("top_level", [])
    out["schema_version"] = 2
    out.setdefault("origin", "static" if out.get("mode") == "static" else "probe")
    return out


def _probe_data(facts: Dict[str, Any], name: str) -> Any:
    probe = facts.get(name)
    data = probe.get("data") if isinstance(probe, dict) else None
    return data if isinstance(data, dict) else None
