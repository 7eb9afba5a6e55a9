"""pip finding no file of a package it can install: "Could not find a version that satisfies the
requirement xformers==0.0.19 (from versions: none)", "No matching distribution found for
torch-directml", "Package 'tts' requires a different Python: 3.12.0 not in '<3.12,>=3.9'". Looked
up in data/wheel_tags.json (tools/gen_wheel_tags.py: the package index's file list of each
release): the Pythons and platforms each release publishes wheels for, its Requires-Python, and
whether it has a source distribution. The answer names what the asked release has, the first or
last release that fits the report's Python and platform, and the Python to use (pure)."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows
from fadoctor.triage.mech_windows import LINUX, MAC
from fadoctor.triage.signal import HINTED, IMPLIED, LOGGED, NAMED, Signal, dedupe
from fadoctor.triage.wheel_table import Row, table

SOURCE = "the package index's file lists: data/wheel_tags.json (tools/gen_wheel_tags.py)"
_Q = "['\u2018\u2019\"`]"
_SPEC = r"((?:\s*[<>=!~]=?=?\s*[\w.*+]+\s*,?){0,4})"
_NOT_FOUND = re.compile(r"Could not find a version that satisfies the requirement "
                        r"([A-Za-z0-9][\w.-]{0,60})(?:\[[\w,-]+\])?" + _SPEC +
                        r"[^\n]{0,80}?\(from versions: ([^)]{0,4000})\)")
_NO_MATCH = re.compile(r"No matching distribution found for ([A-Za-z0-9][\w.-]{0,60})"
                       r"(?:\[[\w,-]+\])?" + _SPEC)
_DIFFERENT = re.compile(r"Package " + _Q + r"([A-Za-z0-9][\w.-]{0,60})" + _Q + r" requires a "
                        r"different Python: (\d+\.\d+)(?:\.\d+)?\S* not in " + _Q +
                        r"([^'\u2019\"`\n]{1,80})" + _Q)
# a package's own setup.py saying it: "TTS requires python >= 3.9 and < 3.12 but your Python
# version is 3.12.0"
_OWN_CHECK = re.compile(r"\b([A-Za-z][\w.-]{1,40}) requires python\s*((?:[<>=!]=?\s*\d+(?:\.\d+)*"
                        r"(?:\s*(?:and|,)\s*)?){1,2}) but your Python version is (\d+\.\d+)", re.I)
_OTHER_INDEX = re.compile(r"--(?:extra-)?index-url|--find-links|\s-f\s|/whl/", re.I)
_ARM_MAC = re.compile(r"\b(?:apple )?m[1-5](?: (?:pro|max|ultra))?\b|apple silicon|\barm64\b", re.I)
_INTEL_MAC = re.compile(r"\bintel mac|macosx?_\d+_\d+_x86_64|\bx86_64\b", re.I)
_WORDS = {"linux_x86_64": "Linux x86_64", "linux_aarch64": "Linux aarch64",
          "win_amd64": "Windows (64-bit)", "macos_arm64": "macOS on Apple silicon",
          "macos_x86_64": "macOS on Intel"}


def _cp(python: Version) -> int:
    return python.major * 100 + python.minor


def _tags(row: Row, where: str) -> List[str]:
    wheels: Dict[str, List[str]] = row[4]
    tags = list(wheels.get(where, [])) + list(wheels.get("any", []))
    if where.startswith("macos_"):
        tags += wheels.get("macos_universal2", [])
    return tags


def admits(row: Row, python: Version) -> bool:
    try:
        return not row[2] or SpecifierSet(row[2]).contains(f"{python.major}.{python.minor}.0")
    except InvalidSpecifier:
        return True


def fits(row: Row, python: Optional[Version], where: str) -> bool:
    """A wheel of this release installs on that Python and platform."""
    tags = _tags(row, where)
    if python is None:
        return bool(tags)
    if not admits(row, python):
        return False
    cp = _cp(python)
    for tag in tags:
        if tag == "py3":
            return True
        digits = re.sub(r"\D", "", tag)
        number = int(digits[0]) * 100 + int(digits[1:]) if len(digits) > 1 else 0
        if (tag.endswith("+") and number <= cp) or number == cp:
            return True
    return False


def pythons(row: Row, where: str) -> List[Version]:
    """The CPython minors this release has wheels for on that platform (3.x from the tags)."""
    out = []
    for tag in _tags(row, where):
        found = re.fullmatch(r"cp3(\d{1,2})\+?", tag)
        if found:
            out.append(Version(f"3.{found.group(1)}"))
    return sorted(set(out))


def _span(versions: Sequence[Version]) -> str:
    if not versions:
        return "no CPython"
    return f"Python {versions[0]}" if len(versions) == 1 else f"Python {versions[0]} to {versions[-1]}"


def _where(ctx: Context) -> Tuple[Optional[str], bool]:
    """The report's platform as the table keys it, and whether the report states it (False: the
    default, Linux x86_64, taken because nothing says otherwise)."""
    if on_windows(ctx):
        return "win_amd64", True
    joined = ctx.text.joined
    if MAC.search(joined):
        if _INTEL_MAC.search(joined):
            return "macos_x86_64", True
        return ("macos_arm64", True) if _ARM_MAC.search(joined) else (None, True)
    if ctx.arm_host is not None:
        return "linux_aarch64", True
    return "linux_x86_64", bool(LINUX.search(joined))


def _spec(text: str) -> Optional[SpecifierSet]:
    """The asked versions, a local label dropped (torch==1.10.0+cu113 asks for 1.10.0's files)."""
    text = re.sub(r"\+[\w.]+", "", text.strip().rstrip(","))
    try:
        return SpecifierSet(text) if text else None
    except InvalidSpecifier:
        return None


def _asked(rows: List[Row], spec: Optional[SpecifierSet]) -> List[Row]:
    if spec is None:
        return [r for r in rows if not Version(r[0]).is_prerelease] or rows
    return [r for r in rows if spec.contains(r[0], prereleases=True)]


def _pin(package: str, version: str) -> str:
    return command("pip", "install", requirement(package, version))


def no_file(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NOT_FOUND, ("satisfies the requirement",))
    if hit is not None:
        package, spec_text, listed = hit[1].group(1), hit[1].group(2), hit[1].group(3)
    else:
        hit = ctx.first(_NO_MATCH, ("no matching distribution found",))
        if hit is None:
            return []
        package, spec_text, listed = hit[1].group(1), hit[1].group(2), "none"
    rows = table().get(str(canonicalize_name(package)))
    if not rows or package.lower() == "triton":  # mech_windows names triton-windows
        return []
    index = hit[0]
    spec = _spec(spec_text)
    asked = _asked(rows, spec)
    offered = {item.strip() for item in listed.split(",")}
    if any(r[0] in offered for r in asked):
        return []  # pip found the asked release: something else refused it
    python = ctx.python
    where, stated = _where(ctx)
    quotes = dedupe([ctx.quote(index), *ctx.quotes("python", "os", "machine")])
    label = f"{package}{spec_text.strip()}" if spec_text.strip() else package
    if not asked:  # no such release on the index at all
        if spec is None or _OTHER_INDEX.search(ctx.text.joined):
            return []
        newest = _asked(rows, None)[-1][0]
        if any(Version(item.version.split("+")[0]) > Version(newest) for item in spec
               if item.operator in ("==", "===", ">=", ">") and "*" not in item.version):
            return []  # newer than the table's reading of the index: it may exist by now
        return [Signal("no_release", Category.VERSION_CONFLICT,
                       f"{label} names no release the package index has: {package}'s releases "
                       f"run to {newest}", quotes, NAMED,
                       [Remedy(summary=f"Ask for a release that exists ({newest} is the newest); "
                               "where a project's requirements name it, that pin is wrong or "
                               "names another index's build.", commands=[_pin(package, newest)])],
                       details={"source": SOURCE})]
    if where is None:
        return []
    wheels_listed = any(r[0] in offered and not r[3] for r in rows)
    if offered - {"none", ""} and (
            not _consistent(rows, offered, asked[-1], python, where)
            or (not stated and wheels_listed and any(
                _consistent(rows, offered, asked[-1], python, other, where)
                for other in _WORDS if other != where))):
        # a Python that takes what pip listed takes the asked release too, or (the platform
        # unstated) another platform explains the listed wheels as well: the table cannot say
        return []
    if any(r[3] and (python is None or admits(r, python)) for r in asked):
        return []  # a source distribution pip could build: not a missing wheel
    if python is not None and any(fits(r, python, where) for r in asked):
        return []  # the table has a file for this: another index or a network failure
    return _explain(package, label, rows, asked, python, where, stated, quotes)


def _consistent(rows: List[Row], offered: Set[str], asked: Row, python: Optional[Version],
                where: str, fits_on: Optional[str] = None) -> bool:
    """Some Python (the report's, if it states one) takes a wheel of every release pip listed but
    none of the asked release on this platform: pip's list agrees that the Python is why. With
    `fits_on`, a Python the asked release does have a wheel for there (the platform is why)."""
    listed = [r for r in rows if r[0] in offered and not r[3]]
    candidates = [python] if python is not None else [Version(f"3.{m}") for m in range(6, 16)]
    return any(all(fits(r, p, where) for r in listed) and not fits(asked, p, where)
               and (fits_on is None or fits(asked, p, fits_on)) for p in candidates)


def _explain(package: str, label: str, rows: List[Row], asked: List[Row],
             python: Optional[Version], where: str, stated: bool,
             quotes: List[Any]) -> List[Signal]:
    last = asked[-1]
    place = _WORDS.get(where, where)
    anywhere = [w for w in ("linux_x86_64", "linux_aarch64", "win_amd64", "macos_arm64",
                            "macos_x86_64") if any(fits(r, None, w) for r in rows)]
    if not any(fits(r, None, where) for r in rows):
        if not stated:
            return []
        return [_platform(package, place, where, anywhere, quotes)]
    if python is None:
        span = pythons(last, where)
        if not span:  # a pure wheel installs on any Python its Requires-Python admits
            return []
        # every main platform gets the same Pythons: the platform cannot be why pip found none
        same = all(pythons(last, w) == span for w in anywhere)
        return [Signal("no_wheel_python", Category.WRONG_WHEEL,
                       f"pip finds no file of {label} it can install here: {package} {last[0]} "
                       f"publishes wheels for {_span(span) if span else 'pure Python'} on {place}, "
                       "so this interpreter is outside them (another Python minor, or a 32-bit "
                       "Python)", quotes, LOGGED if same and span else IMPLIED,
                       [Remedy(summary=f"Create the environment with a 64-bit {_span(span[-1:])}"
                               f" (the newest its wheels cover) and install {package} there."
                               if span else f"Use a 64-bit Python {package} {last[0]} supports.")],
                       details={"source": SOURCE})]
    span = pythons(last, where)
    later = [r for r in rows if fits(r, python, where) and not Version(r[0]).is_prerelease]
    first_fit = next((r for r in later if Version(r[0]) > Version(last[0])), None)
    earlier = [r for r in later if Version(r[0]) < Version(asked[0][0])]
    fixes: List[Remedy] = []
    if first_fit is not None:
        fixes.append(Remedy(summary=f"Install {package} {first_fit[0]} or later: the first release "
                            f"with a wheel for Python {python} on {place} (check that the rest "
                            "of the environment supports it).",
                            commands=[command("pip", "install",
                                              requirement(package, first_fit[0], op=">="))]))
    elif earlier and not span:
        fixes.append(Remedy(summary=f"Or pin {package} {earlier[-1][0]}, the last release with "
                            f"a wheel for Python {python} on {place}.",
                            commands=[_pin(package, earlier[-1][0])]))
    older = [v for v in span if v < python]
    use = older[-1] if older else (span[-1] if span else None)
    if use is not None:
        fixes.insert(0 if first_fit is None else 1, Remedy(
            summary=f"{'Or c' if first_fit is not None else 'C'}reate the environment with Python "
                    f"{use} (python{use}): {package} {last[0]} has wheels for {_span(span)} on "
                    f"{place}, none for Python {python}."))
    if not later and not span:
        return []
    return [Signal("no_wheel_python", Category.WRONG_WHEEL,
                   f"{label} publishes no wheel for Python {python} on {place}: {package} "
                   f"{last[0]} has wheels for {_span(span)} only"
                   + (f"; the first release with one for Python {python} is {first_fit[0]}"
                      if first_fit is not None else
                      "" if later else f", and no release of {package} has one for Python {python}"),
                   quotes, NAMED, fixes, details={"source": SOURCE})]


def _platform(package: str, place: str, where: str, anywhere: List[str],
              quotes: List[Any]) -> Signal:
    has = ", ".join(_WORDS[w] for w in anywhere) or "other platforms"
    if where == "win_amd64":
        fix = Remedy(summary=f"Run it under WSL2 (Linux on Windows), where {package}'s Linux "
                     "wheels install, or on a Linux machine.", commands=["wsl --install"])
    elif where.startswith("macos"):
        fix = Remedy(summary=f"{package} does not run on macOS: use a Linux machine (with an "
                     "NVIDIA GPU where it needs CUDA), or leave it out on macOS (a "
                     "`; sys_platform == 'linux'` marker) and take the code path without it.")
    else:
        fix = Remedy(summary=f"No {package} wheel exists for {place}: build it from source on "
                     "this machine, or take the vendor's build for it (NVIDIA's for Jetson and "
                     "other aarch64 systems), or run on an x86_64 machine.")
    return Signal("no_wheel_platform", Category.PLATFORM_UNSUPPORTED,
                  f"{package} publishes no wheel for {place} in any release (its wheels are for "
                  f"{has}) and no source to build: pip finds nothing to install", quotes, NAMED,
                  [fix], details={"source": SOURCE})


def different_python(ctx: Context) -> List[Signal]:
    """pip refusing a release whose Requires-Python excludes this Python: the last release that
    admits it, or a Python the asked one admits."""
    hit = ctx.first(_DIFFERENT, ("requires a different python",))
    if hit is not None:
        package, have, needs = hit[1].group(1), Version(hit[1].group(2)), hit[1].group(3)
    else:
        hit = ctx.first(_OWN_CHECK, ("but your python version is",))
        if hit is None:
            return []
        package, have = hit[1].group(1), Version(hit[1].group(3))
        needs = re.sub(r"\s*(?:and|,)\s*", ",", hit[1].group(2)).replace(" ", "")
    rows = table().get(str(canonicalize_name(package)))
    quotes = [ctx.quote(hit[0])]
    fixes = []
    if rows:
        admitted = [r for r in rows if admits(r, have) and not Version(r[0]).is_prerelease
                    and (r[3] or any(fits(r, have, w) for w in r[4]))]
        if admitted:
            fixes.append(Remedy(summary=f"Pin {package} {admitted[-1][0]}, the last release whose "
                                f"Requires-Python admits Python {have}.",
                                commands=[_pin(package, admitted[-1][0])]))
    try:
        wanted = SpecifierSet(needs)
        fit = [v for v in (Version(f"3.{m}") for m in range(8, 16))
               if wanted.contains(f"{v}.0")]
    except (InvalidSpecifier, InvalidVersion):
        fit = []
    if fit:
        fixes.insert(0, Remedy(summary=f"Create the environment with Python {fit[-1]} "
                               f"(python{fit[-1]}): {package} asks for Python {needs}."))
    return [Signal("requires_python", Category.VERSION_CONFLICT,
                   f"{package} requires Python {needs}, and this is Python {have}", quotes, NAMED,
                   fixes, details={"source": SOURCE})]


# the same told in prose, with no pip output: "xFormers cannot be updated to 0.0.19 ... if you
# specify 0.0.19 you are told this version does not exist" on Python 3.11, "no build of tensorrt
# available for python 3.11"
_CANNOT_INSTALL = re.compile(r"\b(?:can(?:not|'t)|unable to|fail(?:s|ed)? to|won't|could not|"
                             r"couldn't)\s+(?:be\s+)?(?:install|update|upgrade|download|find)\w*|"
                             r"\bnot (?:available|found|exist\w*)\b|\bno (?:build|wheel|version|"
                             r"matching distribution)s?\b|does(?: not|n't) exist", re.I)
_DISTRIBUTION = re.compile(r"\b([A-Za-z][\w.-]{1,40})\b")
# an environment listing's "- Jax version: not installed": a fact, not a failure
_LISTING = re.compile(r"version\W{0,4}(?:\(\w+\??\)\W{0,3})?(?:not installed|N/?A)\b", re.I)


def prose_no_wheel(ctx: Context) -> List[Signal]:
    """A package said not to install, with the Python (or platform) the report states and no pip
    output of its own: the table's releases for that Python, as no_file answers pip's line."""
    if ctx.first(_NOT_FOUND, ("satisfies the requirement",)) or \
            ctx.first(_NO_MATCH, ("no matching distribution",)):
        return []  # pip's own words: no_file
    if ctx.python is None or ctx.seen.raised:
        return []
    where, stated = _where(ctx)
    if where is None:
        return []
    told = [i for i, _ in ctx.find(_CANNOT_INSTALL, ("not", "no ", "can", "unable", "fail",
                                                     "won't", "could", "exist"))
            if not _LISTING.search(ctx.text.lines[i])]
    for index in told[:20]:
        for word in _DISTRIBUTION.findall(ctx.text.lines[index]):
            package = str(canonicalize_name(word))
            rows = table().get(package)
            if not rows or package in ("torch", "triton", "numpy", "python", "pip"):
                continue
            signal = _prose(ctx, package, rows, index, where, stated)
            if signal:
                return signal
    return []


def _prose(ctx: Context, package: str, rows: List[Row], index: int, where: str,
           stated: bool) -> List[Signal]:
    python = ctx.python
    assert python is not None
    said = {m.group(1) for line in ctx.text.lines for m in re.finditer(
        rf"(?i)\b{re.escape(package)}\W{{0,3}}(?:==|version\s*|v)?\s*(\d+\.\d+(?:\.\d+){{0,2}})",
        line)}
    mentioned = [r for r in rows if any(r[0] == v or r[0].startswith(v + ".") for v in said)]
    asked = [r for r in mentioned if not r[3] and not fits(r, python, where)]
    if not asked:
        newest = _asked(rows, None)[-1]
        if mentioned or newest[3] or fits(newest, python, where):
            return []
        asked = [newest]
    quotes = dedupe([ctx.quote(index), *ctx.quotes("python", "os", "machine")])
    found = _explain(package, package, rows, asked, python, where, stated, quotes)
    for signal in found:
        signal.strength = HINTED
        signal.message = "as the report tells it, " + signal.message
    return found
