"""A package looked up by a distribution name it no longer has: `importlib.metadata`'s
PackageNotFoundError names the distribution asked for (CPython Lib/importlib/metadata:
`PackageNotFoundError(name)`), while the report installs the package under another name
(flashinfer is published as flashinfer-python from 0.2.0: flashinfer-ai/flashinfer#794). The
code asking (a serving engine's version check) predates the rename: its newer release asks for
the new name (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import Unsafe, command, name
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.signal import NAMED, Signal, dedupe

_NOT_FOUND = re.compile(r"PackageNotFoundError:\s*(?:No package metadata was found for )?"
                        r"'?([A-Za-z0-9][\w.-]{0,60})'?")
_INSTALLED = r"(?:pip3?|uv pip|uv)\s+install\s+(?:-\S+\s+)*({0}[-_][\w.-]+)"
# the programs whose own checks look packages up by name (named in the report's prose)
_CALLERS = ("sglang", "vllm", "transformers", "diffusers", "axolotl", "lmdeploy", "unsloth")


def renamed(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NOT_FOUND, ("packagenotfounderror",))
    if hit is None:
        return []
    asked = hit[1].group(1).rstrip(".")
    installed = ctx.first(re.compile(_INSTALLED.format(re.escape(asked)), re.I), ("install",))
    if installed is None:
        return []
    actual = installed[1].group(1)
    caller = frame_package(ctx, hit[0], (asked,)) or next(
        (c for c in _CALLERS if ctx.text.containing((c,))), None)
    who = caller or "the code that checks it"
    try:
        upgrade = [command("pip", "install", "--upgrade", name(caller))] if caller else []
    except Unsafe:
        upgrade = []
    return [Signal("renamed_lookup", Category.VERSION_CONFLICT,
                   f"{who} looks {asked!r} up by that distribution name, but it is installed as "
                   f"{actual!r}: the package was renamed on the index, and this {who} predates "
                   "the rename", dedupe([ctx.quote(hit[0]), ctx.quote(installed[0])]), NAMED,
                   [Remedy(summary=f"Upgrade {who} to a release that asks for {actual} (releases "
                           "after the rename do); keep the package installed under its new "
                           "name.", commands=upgrade)])]
