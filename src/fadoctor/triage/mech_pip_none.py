"""pip listing no release at all of a package fadoctor's wheel table does not hold: "Could not
find a version that satisfies the requirement cuequivariance (from versions: none)". pip lists
only the files this interpreter and platform can install (pip's finder drops a file whose
Requires-Python excludes the interpreter, and a wheel none of whose tags this platform has,
logging each as "Skipping link ... " under -v), so an empty list on Linux or macOS means every
release leaves out this Python version or this platform — or the index the command used does not
carry the package. Windows is mech_windows', the table's packages mech_wheel_tags' (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.utils import canonicalize_name

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows
from fadoctor.triage.signal import HINTED, Signal, dedupe
from fadoctor.triage.wheel_table import table

_NONE = re.compile(r"Could not find a version that satisfies the requirement "
                   r"([A-Za-z0-9][\w.-]{0,60})[^\n]{0,80}?\(from versions: none\)")
_OTHER_INDEX = ("--index-url", "--extra-index-url", " -f ", "--find-links", "-i ")


def nothing_listed(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NONE, ("from versions: none",))
    if hit is None or on_windows(ctx) or ctx.text.containing(_OTHER_INDEX):
        return []
    package = hit[1].group(1)
    if table().get(str(canonicalize_name(package))) or package.lower() in ("torch", "triton"):
        return []
    python = f" (this one is {ctx.python})" if ctx.python else ""
    return [Signal("pip_nothing_listed", Category.WRONG_WHEEL,
                   f"pip found no release of {package} this interpreter and platform can "
                   "install: every release's Requires-Python or wheel tags leave out this Python "
                   "version or platform, or the index does not carry it",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("python", "os", "machine")]), HINTED,
                   [Remedy(summary=f"Check the Python version{python} against the Pythons "
                           f"{package}'s releases support (its project page: Requires-Python "
                           "and the wheels' cpXY tags), and install it in an environment of "
                           "such a Python; pip's -v output names why it skipped each file.",
                           commands=["python --version",
                                     command("pip", "install", package, "-v")])])]
