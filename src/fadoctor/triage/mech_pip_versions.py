"""pip finding releases of a package, but none that satisfies the request: "Could not find a
version that satisfies the requirement torch==2.6.0 (from versions: 2.0.0, ..., 2.2.2)" (pip's
resolver prints what the index offers this interpreter and platform). When every release it
lists is older than the one asked for, the newer releases publish no wheel this platform and
Python can take: the newest listed is the last one that does (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.mech_windows import MAC
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_LISTED = re.compile(r"Could not find a version that satisfies the requirement "
                     r"([A-Za-z0-9][\w.-]{0,60})\s*(?:\[[\w,-]+\])?\s*(?:==|>=|~=)\s*([\w.+]+)[^\n]{0,40}?"
                     r"\(from versions: ([^)]{1,4000})\)")


def _listed(listed: str) -> List[Version]:
    versions = []
    for item in listed.split(","):
        try:
            versions.append(Version(item.strip()))
        except InvalidVersion:
            continue
    return versions


def _newest(listed: str) -> Optional[Version]:
    return max(_listed(listed), default=None)


def newer_than_listed(ctx: Context) -> List[Signal]:
    hit = ctx.first(_LISTED, ("from versions:",))
    if hit is None:
        return []
    package, asked, listed = hit[1].group(1), hit[1].group(2), hit[1].group(3)
    newest = _newest(listed)
    try:
        wanted = Version(asked)
    except InvalidVersion:
        return []
    if newest is None:
        return []
    if newest < wanted:
        return _newer(ctx, hit, package, wanted, newest)
    oldest = min(_listed(listed))
    return _older(ctx, hit, package, wanted, oldest) if oldest > wanted else []


def _newer(ctx: Context, hit: Tuple[int, re.Match[str]], package: str, wanted: Version,
           newest: Version) -> List[Signal]:
    mac = ctx.first(MAC, ("mac", "darwin", "os x", "/users/", "apple"))
    where = "this macOS machine and Python" if mac else "this platform and Python"
    return [Signal("newer_than_listed", Category.PLATFORM_UNSUPPORTED if mac else
                   Category.WRONG_WHEEL,
                   f"the index offers {package} up to {newest} for {where}: {package} {wanted} "
                   "publishes no wheel this machine can take (newer releases dropped this "
                   "platform, or this Python)",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(mac[0])] if mac else [])]), LOGGED,
                   [Remedy(summary=f"Install {package} {newest}, the newest release for {where}, "
                           "with the packages pinned to match it; or run a platform and Python "
                           f"that {package} {wanted} publishes wheels for (its files on the index "
                           "list the tags)" + (" - an Apple silicon Mac, or Linux" if mac else "")
                           + ".", commands=[command("pip", "install", f"{package}=={newest}")]),
                    Remedy(summary=f"If {package} {wanted} is a fresh release, its upload to this "
                           "index may be pending or have failed (a file over the index's size "
                           "limit): wait for it, or install it from the project's own wheel index "
                           "where its install docs name one (pip install --index-url URL).")])]


def _older(ctx: Context, hit: Tuple[int, re.Match[str]], package: str, wanted: Version,
           oldest: Version) -> List[Signal]:
    """Every release the index lists for this interpreter is newer than the one asked for: the
    older release published no wheel for this Python (a Python newer than it supports): pip
    lists only releases that have one. For torch the matrix names the Pythons of each minor."""
    pythons: List[str] = []
    if package.lower() == "torch":
        minor = f"{wanted.major}.{wanted.minor}"
        pythons = next((list(t.python) for t in ctx.matrix.torch_releases if t.minor == minor), [])
    plain = [p for p in pythons if p[-1:].isdigit()]
    supports = f" ({package} {wanted} has wheels for Python {', '.join(plain)})" if plain else ""
    newest_python = f"Python {plain[-1]}" if plain else "an older Python"
    return [Signal("older_than_listed", Category.WRONG_WHEEL,
                   f"the index lists {package} from {oldest} on for this interpreter: {package} "
                   f"{wanted} publishes no wheel for this Python, which is newer than that "
                   f"release supports{supports} (or for this platform)",
                   [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary=f"Create the environment with {newest_python}, a Python "
                           f"{package} {wanted} supports (downgrade Python for this pin), or "
                           f"install a release of the package that pins {package} {wanted} "
                           f"whose requirement allows {package} {oldest} or newer.")],
                   details={"source": "pip's resolver lists only the releases with a file this "
                                      "interpreter and platform can install"})]
