"""The release a report says worked: "Error goes away if I switch back to 4.2.0", "downgrading to
xformers==0.0.26 fixed it", "it works with transformers 4.44.2". The report's own evidence of a
regression: a finding whose remedies move that package gets pinning it back as its first remedy
(pure)."""

from __future__ import annotations

import functools
import re
from typing import FrozenSet, List, Optional, Tuple

from fadoctor.report import Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import ext_torch
from fadoctor.triage.api_tables import DISTRIBUTIONS
from fadoctor.triage.context import Context
from fadoctor.triage.mech_symbols import KNOWN
from fadoctor.triage.signal import Signal, dedupe

_V = r"v?(\d+\.\d+(?:\.\d+){0,2}(?:\.post\d+|rc\d+|b\d+)?)"
_PKG = r"([A-Za-z][A-Za-z0-9_.-]{1,50}?)"
# "back to 4.2.0", "downgrade(d) to xformers==0.0.26", "reverting to 0.0.26"
_BACK = re.compile(rf"\b(?:(?:switch\w*|go\w*|roll\w*|went|revert\w*|pin\w*|downgrad\w*)\s+"
                   rf"(?:it\s+|them\s+)?back\s+to|downgrad\w*\s+(?:it\s+)?to|revert\w*\s+to)\s+"
                   rf"(?:{_PKG}\s*(?:==|=|\s)\s*)?{_V}\b", re.I)
_WORKS = re.compile(rf"\b(?:works?|worked|working)\s+(?:fine\s+|well\s+|again\s+)?(?:with|on|in)\s+"
                    rf"{_PKG}\s*(?:==|=|\s)\s*{_V}\b", re.I)
_NOT_PACKAGES = {"python", "cuda", "version", "release", "v", "the", "a", "driver", "windows",
                 "linux", "ubuntu"}


def _named(ctx: Context, version: str) -> Optional[str]:
    """The package the report writes beside this version ("nvidia-cutlass-dsl 4.2.0")."""
    for index in ctx.text.containing((version.lower(),)):  # only the lines holding the version
        found = re.search(rf"([A-Za-z][A-Za-z0-9_.-]{{1,50}})(?:\s+|==|=|-)v?{re.escape(version)}\b",
                          ctx.text.lines[index])
        if found and found.group(1).lower() not in _NOT_PACKAGES:
            return found.group(1)
    return None


# "doesn't work on compute 6.1": a release that did not work
_NEGATED = re.compile(r"(?:n't|\bnot|\bno longer|\bnever)\s+(?:\w+\s+)?$", re.I)


def installable(package: str) -> bool:
    """A distribution the project knows by its index name: the compiled packages it reads, the
    ones whose releases' torch pins or APIs it holds, torch and numpy ("to 11.8", "compute 6.1"
    are words, not packages)."""
    return _key(package) in _known()


@functools.cache
def _known() -> FrozenSet[str]:
    return frozenset(_key(name) for name in (*KNOWN, *ext_torch.table(), *DISTRIBUTIONS,
                                             "torch", "numpy"))


def stated(ctx: Context) -> Optional[Tuple[str, str, int]]:
    """(package, version, line) the report says worked."""
    for pattern in (_BACK, _WORKS):
        for index, found in ctx.find(pattern, ("back to", "downgrad", "revert", "work")):
            line = ctx.text.lines[index]
            if pattern is _WORKS and _NEGATED.search(line[:found.start()]):
                continue
            package = found.group(1) or _named(ctx, found.group(2))
            if package and package.lower() not in _NOT_PACKAGES and installable(package):
                return package, found.group(2), index
    return None


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


def pin_back(ctx: Context, signals: List[Signal]) -> None:
    """Each finding whose remedies name the package the report says worked: that release first."""
    found = stated(ctx)
    if found is None:
        return
    package, version, index = found
    for signal in signals:
        text = " ".join(f"{r.summary} {' '.join(r.commands)}" for r in signal.remedies)
        if _key(package) not in _key(text):
            continue
        # the report's line goes with the evidence (quoted), not into the remedy's words
        signal.quotes = dedupe(sorted([*signal.quotes, ctx.quote(index)], key=lambda q: q.line))
        signal.remedies.insert(0, Remedy(
            summary=f"The report says {package} {version} worked: pin it back until a fixed "
                    "release.",
            commands=[command("pip", "install", f"{package}=={version}")]))
