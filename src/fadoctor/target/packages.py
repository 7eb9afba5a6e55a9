"""Stage `packages`: the relevant installed distributions, read from their metadata."""

import json
import re
from typing import Any, Dict, List, Optional

from .context import Context
from .tables import FAMILIES, canonical, interesting

# Requires-Dist lines kept per distribution, and characters per line: metadata is data, bounded.
MAX_REQUIRES = 64
MAX_REQUIREMENT = 300
# The distribution name at the start of a requirement (PEP 508).
_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_FAMILY_DISTRIBUTIONS = {d for spec in FAMILIES.values() for d in spec["distributions"]}


def run(context: Context) -> Dict[str, Any]:
    out = listing()
    context.remember(out)
    return {"distributions": out}


def listing() -> List[Dict[str, Any]]:
    """The interesting distributions, and every distribution a flash-attention family requires
    (so that a requirement absent from the listing is one that is not installed)."""
    from importlib import metadata

    everything = {}  # type: Dict[str, List[Any]]
    for dist in metadata.distributions():
        raw = dist.metadata["Name"] if dist.metadata else None
        if raw:
            everything.setdefault(canonical(raw), []).append(dist)
    wanted = {name for name in everything if interesting(name)}
    for name in wanted & _FAMILY_DISTRIBUTIONS:
        for dist in everything[name]:
            wanted.update(n for n in map(_required_name, _requires(dist) or []) if n in everything)
    out = [_record(name, dist) for name in wanted for dist in everything[name]]
    out.sort(key=lambda d: (d["name"], d["location"] or ""))
    return out


def _record(name: str, dist: Any) -> Dict[str, Any]:
    try:
        location = str(dist.locate_file(""))  # type: Optional[str]
    except Exception:
        location = None
    direct = None
    text = _read(dist, "direct_url.json")
    if text:
        try:
            direct = json.loads(text).get("url")
        except ValueError:
            direct = None
    top = _read(dist, "top_level.txt")
    installer = _read(dist, "INSTALLER")
    return {
        "name": name,
        "version": dist.version,
        "location": location,
        "installer": installer.strip() if installer else None,
        "direct_url": direct,
        "top_level": [t.strip() for t in top.splitlines() if t.strip()] if top else [],
        "requires": _requires(dist),
    }


def _requires(dist: Any) -> Optional[List[str]]:
    """Requires-Dist as written ([]: none declared; None: the metadata could not be read)."""
    try:
        lines = dist.requires
    except Exception:
        return None
    return [str(r)[:MAX_REQUIREMENT] for r in (lines or [])[:MAX_REQUIRES]]


def _required_name(requirement: str) -> Optional[str]:
    found = _NAME.match(requirement)
    return canonical(found.group(1)) if found else None


def _read(dist: Any, name: str) -> Optional[str]:
    try:
        text = dist.read_text(name)
        return str(text) if text is not None else None
    except Exception:
        return None
