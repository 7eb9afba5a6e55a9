"""The fix for a catalogued message printed by a project that wraps flash-attention (xformers'
check of the flash-attn version it imports), from the message's captures, the ranges the
wrapper's releases accept and the flash-attn releases the matrix knows (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.report import Remedy
from fadoctor.triage.catalog_data import Entry
from fadoctor.triage.context import Context

WRAPPERS = ("xformers",)


def _version(raw: Optional[str]) -> Optional[Version]:
    try:
        return Version(raw.strip(".,:;'\"")) if raw else None
    except InvalidVersion:
        return None


def _stated(entry: Entry, values: Dict[str, str], fact: str) -> Optional[Version]:
    return next((_version(values.get(n)) for n, f in entry.captures if f == fact), None)


def _newest_in(ctx: Context, low: Version, high: Version) -> Optional[Version]:
    """The newest flash-attn release the matrix lists within [low, high]: a pin that exists."""
    found = [Version(str(rel.version)) for rel in ctx.matrix.flash_attn_releases]
    return max((v for v in found if low <= v <= high), default=None)


def _accepting(entry: Entry, installed: Version) -> Optional[Tuple[str, str, str]]:
    """The newest wrapper release whose check accepts the installed flash-attn:
    (its last tag, min, max)."""
    fits = [(last, low, high) for _, last, low, high in entry.accepts
            if Version(low) <= installed <= Version(high)]
    return fits[-1] if fits else None


def for_entry(ctx: Context, entry: Entry, values: Dict[str, str]) -> List[Remedy]:
    low = _stated(entry, values, "version_min")
    high = _stated(entry, values, "version_max")
    installed = _stated(entry, values, "version") or ctx.fa2
    literal = re.search(r"\d+\.\d+\.\d+", entry.printed)
    if low is None and high is None and literal is not None:
        low = high = Version(literal.group(0))
    found: List[Remedy] = []
    pin = _newest_in(ctx, low, high) if low is not None and high is not None else None
    if pin is not None:
        found.append(Remedy(
            summary=f"xformers ({entry.location}, {entry.first}..{entry.last}) refuses the "
                    f"flash-attn it imports unless it is >={low},<={high}"
                    + (f"; {installed} is installed" if installed is not None else "")
                    + f". Install flash-attn {pin}, the newest release in that range, pinned "
                    "exactly.",
            commands=[f'pip install "flash-attn=={pin}" --no-build-isolation']))
    fits = _accepting(entry, installed) if installed is not None else None
    if fits is not None:
        tag, a, b = fits
        found.append(Remedy(
            summary=f"Or keep flash-attn {installed} and install xformers {tag.lstrip('v')}, "
                    f"whose check accepts flash-attn >={a},<={b} "
                    f"(facebookresearch/xformers@{tag}:xformers/ops/fmha/flash.py); each xformers "
                    "release is built for one torch: see what pip would change first.",
            commands=[f'pip install "xformers=={tag.lstrip("v")}" --dry-run']))
    if not found:
        found.append(Remedy(summary=f"xformers ({entry.first}..{entry.last}) checks the "
                            "flash-attn version it imports: install one in the range the message "
                            "names, or an xformers release that accepts the installed one."))
    return found
