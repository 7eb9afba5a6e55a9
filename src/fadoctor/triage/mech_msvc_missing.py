"""A package compiled from source on Windows with no MSVC: setuptools' (distutils') own refusal,
"error: Microsoft Visual C++ 14.0 or greater is required. Get it with "Microsoft C++ Build Tools""
(setuptools/_distutils/_msvccompiler.py, raised when vswhere finds no installation with the VC
tools). pip builds from source only where the index has no wheel of that package for this
Python and platform, so the fixes are the C++ build tools (Visual Studio Build Tools with the
"Desktop development with C++" workload: MSVC v14x and a Windows SDK), or not compiling: a
release, or a Python, for which a wheel exists (`--prefer-binary` takes an older release's wheel
over a newer release's source) (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

SOURCE = ("setuptools/_distutils/_msvccompiler.py (\"Microsoft Visual C++ 14.0 or greater is "
          "required\")")
_NO_MSVC = re.compile(r"Microsoft Visual C\+\+ 14\.0 or greater is required")
_BUILDING = re.compile(r"(?:Failed building wheel for |Building wheel for )([A-Za-z][\w.-]{0,60})")


def no_msvc(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_MSVC, ("visual c++ 14.0",))
    if hit is None:
        return []
    failed = ctx.first(_BUILDING, ("failed building wheel for",)) or \
        ctx.first(_BUILDING, ("building wheel for",))
    package = failed[1].group(1) if failed else None
    what = package or "a package"
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.quote(failed[0])] if failed else [])])
    remedies = [
        Remedy(summary="Install the C++ build tools setuptools looks for: Visual Studio Build "
               "Tools (or Visual Studio) with the \"Desktop development with C++\" workload "
               "(MSVC v14x and a Windows SDK), then open a new terminal and rerun the install.",
               commands=["winget install Microsoft.VisualStudio.2022.BuildTools --override "
                         "\"--wait --passive --add Microsoft.VisualStudio.Workload.VCTools "
                         "--includeRecommended\""]),
        Remedy(summary=f"Or avoid compiling {what}: take a release that has a wheel for this "
               "Python (--prefer-binary takes an older release's wheel over a newer release's "
               "source), or use a Python version it publishes Windows wheels for.",
               commands=[command("pip", "install", "--prefer-binary", package)] if package else [])]
    return [Signal("msvc_missing", Category.BUILD_TOOLCHAIN,
                   f"pip is compiling {what} from source on Windows (no wheel of it fits this "
                   "Python and platform), and setuptools finds no Microsoft C++ compiler (MSVC) "
                   "installed", quotes, NAMED, remedies, details={"source": SOURCE})]
