"""Stage `packages`: the relevant installed distributions, read from their metadata."""

import json
from typing import Any, Dict, List, Optional

from .context import Context
from .tables import canonical, interesting


def run(context: Context) -> Dict[str, Any]:
    out = listing()
    context.remember(out)
    return {"distributions": out}


def listing() -> List[Dict[str, Any]]:
    from importlib import metadata

    out = []
    for dist in metadata.distributions():
        raw = dist.metadata["Name"] if dist.metadata else None
        if not raw:
            continue
        name = canonical(raw)
        if not interesting(name):
            continue
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
        out.append({
            "name": name,
            "version": dist.version,
            "location": location,
            "installer": installer.strip() if installer else None,
            "direct_url": direct,
            "top_level": [t.strip() for t in top.splitlines() if t.strip()] if top else [],
        })
    out.sort(key=lambda d: (d["name"], d["location"] or ""))
    return out


def _read(dist: Any, name: str) -> Optional[str]:
    try:
        text = dist.read_text(name)
        return str(text) if text is not None else None
    except Exception:
        return None
