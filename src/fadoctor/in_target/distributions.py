"""The relevant installed distributions, read from their metadata: the `packages` stage's listing,
which the other stages' context also asks for."""

import json
import os
import re
from typing import Any, Dict, List, Optional, Set

from .tables import FAMILIES, canonical, interesting

# Requires-Dist lines kept per distribution, and characters per line: metadata is data, bounded.
MAX_REQUIRES = 64
MAX_REQUIREMENT = 300
MAX_SHARED = 20  # shared files named per distribution
# The distribution name at the start of a requirement (PEP 508).
_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_FAMILY_DISTRIBUTIONS = {d for spec in FAMILIES.values() for d in spec["distributions"]}


def listing() -> List[Dict[str, Any]]:
    """The interesting distributions and those that require torch, and every distribution a
    flash-attention family or one of those requires (so that a requirement absent from the
    listing is one that is not installed). One whose
    METADATA cannot be read is recorded alone, with why."""
    from importlib import metadata

    everything = {}  # type: Dict[str, List[Any]]
    out = []  # type: List[Dict[str, Any]]
    on_torch: Set[str] = set()
    for dist in metadata.distributions():
        try:
            headers = dist.metadata
            raw = headers["Name"] if headers else None
            if not raw:  # importlib.metadata gives an empty METADATA for one it could not open
                raise ValueError("its METADATA is missing, unreadable or has no Name")
            everything.setdefault(canonical(raw), []).append(dist)
            if any(_required_name(r) == "torch" for r in headers.get_all("Requires-Dist") or []):
                on_torch.add(canonical(raw))
        except Exception as exc:  # this distribution's metadata alone is broken
            entry = _unreadable(dist, exc)
            if entry is not None:
                out.append(entry)
    wanted = {name for name in everything if interesting(name)} | on_torch
    # A family's requirements, and those of every distribution built on torch (whose libraries
    # may come from one: torch-tensorrt's from tensorrt), are listed when installed: one absent
    # from the listing is then one that is not installed.
    for name in wanted & (_FAMILY_DISTRIBUTIONS | on_torch):
        for dist in everything[name]:
            wanted.update(n for n in map(_required_name, _requires(dist) or []) if n in everything)
    chosen = [(name, dist) for name in wanted for dist in everything[name]]
    shared = _shared([(n, d) for n, d in chosen if n in _FAMILY_DISTRIBUTIONS])
    for name, dist in chosen:
        entry = _entry(name, dist)
        if name in _FAMILY_DISTRIBUTIONS and "error" not in entry:
            entry["shared_files"] = shared.get(id(dist))
        out.append(entry)
    out.sort(key=lambda d: (d["name"], d["location"] or ""))
    return out


def _shared(dists: List[Any]) -> Dict[int, Optional[List[str]]]:
    """Per distribution (by id), the files its RECORD lists that another family distribution's
    RECORD in the same folder lists too: installing one overwrote the other's (flash-attn 2.x
    ships flash_attn/cute/ at flash-attn-4's paths). None: its RECORD could not be read."""
    owners = {}  # type: Dict[Any, List[str]]
    files = {}  # type: Dict[int, Optional[List[Any]]]
    for name, dist in dists:
        try:
            where = str(dist.locate_file(""))
            keys = [(where, str(f)) for f in (dist.files or []) if not str(f).endswith(".pyc")
                    and ".dist-info/" not in str(f) and not str(f).startswith("..")]
        except Exception:
            files[id(dist)] = None
            continue
        files[id(dist)] = keys
        for key in keys:
            owners.setdefault(key, []).append(name)
    out = {}  # type: Dict[int, Optional[List[str]]]
    for ident, listed in files.items():
        out[ident] = None if listed is None else sorted(
            k[1] for k in listed if len(set(owners[k])) > 1)[:MAX_SHARED]
    return out


def _entry(name: str, dist: Any) -> Dict[str, Any]:
    try:
        entry = dict(_files(dist), name=name, version=dist.version or "", requires=_requires(dist))
        if name in _FAMILY_DISTRIBUTIONS:  # a family without its compiled extension is broken
            entry["extensions"] = _record_extensions(dist)
        return entry
    except Exception as exc:  # this distribution's metadata alone is broken
        return _unreadable(dist, exc) or {"name": name, "version": "", "location": None,
                                          "error": "%s: %s" % (type(exc).__name__, exc)}


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


def _files(dist: Any) -> Dict[str, Any]:
    """What a distribution says besides its METADATA."""
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
        "location": location,
        "installer": installer.strip() if installer else None,
        "direct_url": direct,
        "top_level": [t.strip() for t in top.splitlines() if t.strip()] if top else [],
    }


def _record_extensions(dist: Any) -> Optional[List[str]]:
    """The compiled extension files the distribution's RECORD lists ([]: none, as after a build
    with FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE or without CUDA; None: it has no RECORD)."""
    text = _read(dist, "RECORD")
    if text is None:
        return None
    out = []  # type: List[str]
    for line in text.splitlines():
        path = line.split(",", 1)[0].strip().strip('"')
        base = path.rsplit("/", 1)[-1]
        if base.endswith((".so", ".pyd")) or ".so." in base:
            out.append(path[:MAX_REQUIREMENT])
        if len(out) >= MAX_REQUIRES:
            break
    return out


def _unreadable(dist: Any, exc: Exception) -> Optional[Dict[str, Any]]:
    """A distribution whose METADATA cannot be read as it should (not UTF-8, a folder, no
    permission): its name and version as far as they can be read, and why the rest could not."""
    import email

    folder = getattr(dist, "_path", None)  # importlib.metadata.PathDistribution's folder
    headers = {}  # type: Dict[str, str]
    for file in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(str(folder), file), "rb") as fh:
                message = email.message_from_string(fh.read().decode("utf-8", "surrogateescape"))
            headers = {k: str(message[k]) for k in ("Name", "Version") if message[k]}
            break
        except Exception:
            continue
    stem = os.path.basename(str(folder)).rsplit(".", 1)[0].split("-", 1)
    name = canonical(headers.get("Name") or stem[0])
    if not interesting(name):
        return None
    version = headers.get("Version") or (stem[1] if len(stem) > 1 else "")
    error = "%s: %s" % (type(exc).__name__, exc)
    return dict(_files(dist), name=name, version=version, error=error[:500])


def _read(dist: Any, name: str) -> Optional[str]:
    try:
        text = dist.read_text(name)
        return str(text) if text is not None else None
    except Exception:
        return None
