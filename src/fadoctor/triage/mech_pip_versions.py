"""pip finding releases of a package, but none that satisfies the request: "Could not find a
version that satisfies the requirement torch==2.6.0 (from versions: 2.0.0, ..., 2.2.2)" (pip's
resolver prints what the index offers this interpreter and platform). When every release it
lists is older than the one asked for, the newer releases publish no wheel this platform and
Python can take: the newest listed is the last one that does (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.mech_windows import MAC
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_LISTED = re.compile(r"Could not find a version that satisfies the requirement "
                     r"([A-Za-z0-9][\w.-]{0,60})\s*(?:\[[\w,-]+\])?\s*(?:==|>=|~=)\s*([\w.+]+)[^\n]{0,40}?"
                     r"\(from versions: ([^)]{1,4000})\)")


def _newest(listed: str) -> Optional[Version]:
    versions = []
    for item in listed.split(","):
        try:
            versions.append(Version(item.strip()))
        except InvalidVersion:
            continue
    return max(versions, default=None)


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
    if newest is None or newest >= wanted:
        return []
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
                           + ".", commands=[command("pip", "install", f"{package}=={newest}")])])]
