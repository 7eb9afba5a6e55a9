"""A library's name undefined inside another library that imports it only when it is available:
trl's `if is_peft_available(): from peft import LoraConfig`, then `LoraConfig(...)` raises
"NameError: name 'LoraConfig' is not defined" where peft is not installed. The name is looked up
in the API tables (api_tables: each tabled package's top-level names by release), so the package
it belongs to is the one the tables say, never a guess from the word (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import api_tables
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_UNDEFINED = re.compile(r"(?:NameError: |\b)name ['\u2018\u2019`]([A-Z]\w{2,60})['\u2018\u2019`] is not "
                        r"defined")
# with no frame: the library the report names with its version ("Error in trl 0.5.0"), which a
# user's own script (a NameError of its own forgotten import) would not be
_STATED = re.compile(r"\b([a-z][a-z0-9_-]{1,30})(?:==| v?| version )(\d{1,3}\.\d{1,3}(?:\.\d{1,4})?)\b")
_NOT_LIBRARIES = {"python", "cuda", "torch", "pytorch", "ubuntu", "windows", "macos", "version",
                  "release", "driver", "gcc", "nvcc", "cudnn", "pip", "conda", "in", "to", "from",
                  "on", "with", "and", "of", "at", "is", "for", "by", "than", "since", "after",
                  "before", "upgrade", "downgrade", "use", "using"}
_FRAME = re.compile(r"File \"[^\"]*[\\/](?:site|dist)-packages[\\/]([A-Za-z_]\w*)[\\/]")


def _framed(ctx: Context, index: int) -> Optional[str]:
    for line in reversed(ctx.text.lines[max(0, index - 6):index]):
        found = _FRAME.search(line)
        if found is not None:
            return found.group(1)
    return None


def _stated_library(ctx: Context) -> Optional[str]:
    for line in ctx.text.lines[:60]:
        for found in _STATED.finditer(line):
            if found.group(1) not in _NOT_LIBRARIES:
                return found.group(1)
    return None


def undefined_import(ctx: Context) -> List[Signal]:
    hit = ctx.first(_UNDEFINED, ("is not defined",))
    if hit is None:
        return []
    name = hit[1].group(1)
    caller = _framed(ctx, hit[0]) or _stated_library(ctx)
    owner = next((p for p in api_tables.PACKAGES.split("|")
                  if p != caller and f"{p}:{name}" in api_tables.api(p).names), None)
    if caller is None or owner is None:
        return []
    dist = api_tables.api(owner).dist
    return [Signal("undefined_import", Category.NOT_INSTALLED,
                   f"{name} is {dist}'s, and {caller} uses it where {dist} can be imported: "
                   f"{dist} is not installed here (or its import failed), so {caller} skipped "
                   "the import and the name is undefined", dedupe([ctx.quote(hit[0])]), LOGGED,
                   [Remedy(summary=f"Install {dist} (a release that the installed {caller} "
                           f"supports), then check that it imports.",
                           commands=[command("pip", "install", dist),
                                     command("python", "-c", f"import {owner}")])])]
