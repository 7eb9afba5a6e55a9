"""A library's name undefined inside another library that imports it only when it is available:
trl's `if is_peft_available(): from peft import LoraConfig`, then `LoraConfig(...)` raises
"NameError: name 'LoraConfig' is not defined" where peft is not installed. The name is looked up
in the API tables (api_tables: each tabled package's top-level names by release), so the package
it belongs to is the one the tables say, never a guess from the word (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage import api_tables
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import dist_of
from fadoctor.triage.signal import IMPLIED, LOGGED, Signal, dedupe
from fadoctor.triage.stated_fix import installable

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


# A NameError raised in a library's own code for a name of no tabled package: the release refers
# to a name it never binds, a defect of that release (its next release fixes it). The releases
# that fixed one, read from the wheels: bitsandbytes 0.37.0's cuda_setup/main.py calls
# `cuda_setup.add_log_entry` in is_cublasLt_compatible (a GPU below sm_75) where 0.37.1 calls
# `CUDASetup.get_instance().add_log_entry`.
_ANY_UNDEFINED = re.compile(r"NameError: name ['\u2018\u2019`](\w{1,60})['\u2018\u2019`] is not defined")
_ANY_FRAME = re.compile(r"(?:site|dist)-packages[\\/]([A-Za-z_]\w*)[\\/][^\"\n]{0,200}\.py\"?, line "
                        r"(\d+)")
FIXED: Dict[Tuple[str, str], str] = {("bitsandbytes", "cuda_setup"): "0.37.1"}
# frames that run other code (a build's setup.py under setuptools, a notebook's cell), never the
# code at fault
_NOT_A_LIBRARY = {"torch", "IPython", "ipykernel", "runpy", "importlib", "site", "setuptools",
                  "pip", "_distutils_hack", "distutils", "pkg_resources", "wheel", "hatchling"}


def _defect_at(ctx: Context) -> Optional[Tuple[int, str, str, str]]:
    """(line, package, name, where) of a NameError a library's own frame raised, or one of a known
    defect whose package the report names (no frame quoted)."""
    for index, found in ctx.find(_ANY_UNDEFINED, ("is not defined",)):
        for line in reversed(ctx.text.lines[max(0, index - 4):index]):
            frame = _ANY_FRAME.search(line)
            if frame is not None and frame.group(1) not in _NOT_A_LIBRARY:
                return (index, dist_of(frame.group(1)), found.group(1),
                        f"its line {frame.group(2)}")
    named = ctx.first(_ANY_UNDEFINED, ("is not defined",))
    for package, name in FIXED:
        if named is not None and named[1].group(1) == name and ctx.text.containing((package,)):
            return named[0], package, name, "its code"
    return None


def own_defect(ctx: Context) -> List[Signal]:
    found = _defect_at(ctx)
    if found is None or undefined_import(ctx):
        return []
    index, package, name, line = found
    fixed = FIXED.get((package, name))
    if fixed is not None:
        remedy = Remedy(summary=f"Upgrade {package} to {fixed} or later, which fixed it.",
                        commands=[command("pip", "install", "--upgrade",
                                          requirement(package, fixed, op=">="))])
    else:
        remedy = Remedy(summary=f"Upgrade {package} to its newest release (or the next one after "
                        "the installed): a release that refers to a name it never defines is fixed "
                        "in a later one.", commands=[command("pip", "install", "--upgrade", package)]
                        if installable(package) else [])
    return [Signal("library_name_error", Category.VERSION_CONFLICT,
                   f"{package}'s own code refers to {name!r}, which it never defines ({line} "
                   f"raised the NameError): a defect of the installed {package} release, not "
                   "of this environment", dedupe([ctx.quote(index)]), IMPLIED,
                   [remedy])]
