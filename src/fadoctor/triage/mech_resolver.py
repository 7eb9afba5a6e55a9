"""A resolver that cannot satisfy two requirements of one package at once, in its own words:
pip's ResolutionImpossible ("The conflict is caused by: / The user requested torch==2.7.1 /
axolotl 0.10.0 depends on torch==2.6.0", pypa/pip@26.2.1:src/pip/_internal/resolution/resolvelib/
factory.py, `get_installation_error`), uv's derivation ("Because axolotl==0.10.0 depends on
torch==2.6.0 and your project depends on torch==2.7.1, we can conclude that your project's
requirements are unsatisfiable", astral-sh/uv crates/uv-resolver/src/pubgrub/report.rs), and pip
replacing an installed package a new one requires another release of ("Collecting torch>=1.10.0
(from accelerate)" then "Uninstalling torch-1.8.2"). The two requirements are named, and the ways
out: the release of the pinning package whose requirement admits the other, the other side moved,
or (uv) an override (pure)."""

from __future__ import annotations

import re
from contextlib import suppress
from typing import List, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from fadoctor.install.torch import torch_index
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import Unsafe, command, name
from fadoctor.triage import ext_torch
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_SPEC = (r"((?:[<>=!~]=?=?\s?[\w.*+!-]{1,40})(?:\s?,\s?[<>=!~]=?=?\s?[\w.*+!-]{1,40}){0,3})")
_PKG = r"([A-Za-z0-9][\w.-]{0,60})"
# pip: "The user requested torch==2.7.1", "The user requested (constraint) torch<=2.14.1",
# "axolotl 0.10.0 depends on torch==2.6.0" (one per line under "The conflict is caused by:")
_PIP_SIDE = re.compile(r"^\s*(?:The user requested(?: \(constraint\))?|" + _PKG +
                       r" ([\w.+!-]{1,40}) depends on) " + _PKG + r"(?:\[[\w,-]+\])?\s?" + _SPEC)
# uv: "axolotl==0.10.0 depends on torch==2.6.0", "vllm==0.6.5 depends on torch{platform_machine
# != 'aarch64'}==2.5.1", "your project depends on torch==2.7.1", "you require torch==2.7.1",
# "only torch<=2.6.0+cu124 is available"
_UV_SIDE = re.compile(r"(?:\b" + _PKG + r"((?:[=<>!~]=?)[\w.+*]{1,40})? depends on|\byour project "
                      r"depends on|\byou require) " + _PKG + r"(?:\{[^}\n]{0,80}\})?" + _SPEC)
_UV_ONLY = re.compile(r"\bonly " + _PKG + r"([<>=]=?[\w.+]{1,40}) is available")
# the derivation's first line: "  ╰─▶ Because axolotl==0.10.0 depends on ..."
_UV_BECAUSE = re.compile(r"^[\s╰─▶]*Because (?:only |there is no |the |you |your |[\w.-]+[=<>!~ ])")
_COLLECTING = re.compile(r"^\s*Collecting " + _PKG + _SPEC + r"\s?\(from " + _PKG)
_UNINSTALL = re.compile(r"(?:Uninstalling|Found existing installation:) " + _PKG + r"[- ]"
                        r"(\d[\w.+!]{0,40}?)(?::|$|\s)")
_SOURCE = "the resolver's own lines (pip's ResolutionImpossible, uv's derivation, pip's log)"

Side = Tuple[Optional[str], Optional[str], str, str]  # (package or None: the user, its release, dep, spec)


def _spec(text: str) -> Optional[SpecifierSet]:
    """The requirement's versions; a local label (+cu124) dropped where only == may carry one."""
    text = re.sub(r"\s", "", text).rstrip(",")
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        try:
            return SpecifierSet(re.sub(r"\+[\w.]+", "", text))
        except InvalidSpecifier:
            return None


def _pinned(spec: SpecifierSet) -> Optional[str]:
    return next((s.version for s in spec if s.operator == "==" and "*" not in s.version), None)


def _disjoint(a: SpecifierSet, b: SpecifierSet) -> bool:
    """No release satisfies both: a pin of one the other excludes (the common case)."""
    for one, other in ((a, b), (b, a)):
        pin = _pinned(one)
        if pin is not None and not other.contains(pin.split("+")[0], prereleases=True):
            return True
    return False


def _conflict(sides: Sequence[Side]) -> Optional[Tuple[Side, Side]]:
    for i, one in enumerate(sides):
        for other in sides[i + 1:]:
            if one[2].lower() != other[2].lower():
                continue
            a, b = _spec(one[3]), _spec(other[3])
            if a is not None and b is not None and _disjoint(a, b):
                # the user's (or the project's) requirement second: it is what stays
                return (one, other) if other[0] is None or one[0] is not None else (other, one)
    return None


def _who(side: Side) -> str:
    return "you ask for" if side[0] is None else f"{side[0]} {side[1] or ''}".strip() + " requires"


def _signal(ctx: Context, index: int, pin: Side, keep: Side, uv: bool) -> Signal:
    dep = pin[2]
    wanted = keep[3].replace(" ", "")
    message = (f"the resolver cannot satisfy both: {_who(pin)} {dep}{pin[3].replace(' ', '')} and "
               f"{_who(keep)} {dep}{wanted}")
    fixes: List[Remedy] = []
    keep_pin = _pinned(_spec(keep[3]) or SpecifierSet())
    if pin[0] is not None:
        if dep.lower() == "torch" and keep_pin:
            fixes += ext_torch.remedies(pin[0].lower(), None, keep_pin)
        with suppress(Unsafe):
            fixes.append(Remedy(summary=f"Install a release of {pin[0]} whose requirement admits "
                                f"{dep}{wanted} (a newer one, where it moved on), letting the "
                                "resolver pick it:", commands=[command(
                                    "pip", "install", "--upgrade", name(pin[0]),
                                    f"{name(dep)}{wanted}")]))
        if uv:
            fixes.append(Remedy(summary=f"Or, with uv, override {pin[0]}'s pin where you know "
                                f"it runs with {dep}{wanted} (pyproject.toml):",
                                code=f'[tool.uv]\noverride-dependencies = ["{dep}{wanted}"]'))
        else:
            fixes.append(Remedy(summary=f"Or install {dep}{wanted} first, then {pin[0]} without "
                                "its dependencies (`--no-deps`), installing its other requirements "
                                "yourself, where you know it runs with that release."))
    if keep[0] is not None or pin[0] is None:
        fixes.append(Remedy(summary=f"Or move the other side: {dep}{pin[3].replace(' ', '')} "
                            f"as {_who(pin).replace(' requires', '')} needs, with the packages "
                            "pinned to match."))
    return Signal("resolver_conflict", Category.VERSION_CONFLICT, message,
                  dedupe([ctx.quote(index)]), LOGGED, fixes, details={"source": _SOURCE})


def pip_impossible(ctx: Context) -> List[Signal]:
    starts = ctx.text.containing(("the conflict is caused by",))
    if not starts:
        return []
    sides: List[Side] = []
    first = starts[0]
    for offset in range(1, 12):
        if first + offset >= len(ctx.text.lines):
            break
        found = _PIP_SIDE.search(ctx.text.lines[first + offset])
        if found is not None:
            sides.append((found.group(1), found.group(2), found.group(3), found.group(4)))
    pair = _conflict(sides)
    return [_signal(ctx, first, pair[0], pair[1], uv=False)] if pair else []


def _uv_block(ctx: Context) -> Optional[Tuple[int, str]]:
    """uv's derivation, its lines joined (uv wraps it at the terminal's width): from the first
    "Because" to the blank line after it."""
    start = ctx.first(_UV_BECAUSE, ("because ",))
    if start is None or not ctx.has("we can conclude"):
        return None
    lines: List[str] = []
    for line in ctx.text.lines[start[0]:start[0] + 40]:
        if not line.strip() and lines:
            break
        lines.append(line.strip().lstrip("╰─▶ ").strip())
    return start[0], " ".join(lines)


def uv_unsatisfiable(ctx: Context) -> List[Signal]:
    block = _uv_block(ctx)
    if block is None:
        return []
    first, joined = block
    sides: List[Side] = []
    for found in _UV_SIDE.finditer(joined):
        package = found.group(1)
        sides.append((package, (found.group(2) or "").lstrip("=<>!~") or None,
                      found.group(3), found.group(4)))
    pair = _conflict(sides)
    if pair is not None:
        return [_signal(ctx, first, pair[0], pair[1], uv=True)]
    only = _UV_ONLY.search(joined)
    if only is None:
        return []
    dep, have = only.group(1), only.group(2)
    need = next((s for s in sides if s[2].lower() == dep.lower() and s[0] is not None), None)
    spec, bound = (_spec(need[3]) if need else None), _spec(have)
    if need is None or spec is None or bound is None or not _disjoint_bound(bound, spec):
        return []
    return [_index_short(ctx, first, dep, have, need, spec)]


def _disjoint_bound(have: SpecifierSet, need: SpecifierSet) -> bool:
    """"only torch<=2.6.0+cu124 is available" against "torch>=2.7.0": the newest available is
    below what is needed."""
    top = next((s.version.split("+")[0] for s in have if s.operator in ("<=", "==")), None)
    return top is not None and not need.contains(top, prereleases=True) and any(
        s.operator in (">=", ">", "~=", "==") and Version(s.version.split("+")[0]) > Version(top)
        for s in need)


def _index_short(ctx: Context, index: int, dep: str, have: str, need: Side,
                 spec: SpecifierSet) -> Signal:
    variant = re.search(r"\+(cu\d{3}|rocm[\d.]+|cpu|xpu)", have)
    lowest = min((s.version for s in spec if s.operator in (">=", "==", "~=")), default=None,
                 key=lambda v: [int(p) for p in re.findall(r"\d+", v)[:3]])
    fixes: List[Remedy] = []
    release = next((t for t in ctx.matrix.torch_releases if dep.lower() == "torch" and lowest
                    and (lowest == t.minor or lowest.startswith(t.minor + "."))), None)
    if variant is not None and release is not None:
        fixes.append(Remedy(
            summary=f"The {variant.group(1)} index has no torch {release.minor}: that release is "
                    f"built for {', '.join(release.cuda_variants)}. Install from the index of one "
                    f"of those (the driver must support its CUDA), with torchvision and "
                    "torchaudio from the same index; an installer that chose the old index needs "
                    "its newer release.",
            commands=[command("pip", "install", f"torch=={release.latest_patch}", "--index-url",
                              torch_index(release.default_variant))]))
    fixes.append(Remedy(summary=f"Or install a release of {need[0]} whose requirement admits "
                        f"{dep}{have.replace(' ', '')} (an older one)."))
    return Signal("resolver_conflict", Category.WRONG_WHEEL if variant else
                  Category.VERSION_CONFLICT,
                  f"the index offers {dep}{have} only, and {need[0]} {need[1] or ''} requires "
                  f"{dep}{need[3].replace(' ', '')}: " + (
                      f"the {variant.group(1)} index stops before that release" if variant else
                      "no release there satisfies it"), dedupe([ctx.quote(index)]), LOGGED,
                  fixes, details={"source": _SOURCE})


def replaced(ctx: Context) -> List[Signal]:
    """pip collecting another release of an installed package because a package being installed
    requires it: the installed one is uninstalled, and what was built against it breaks."""
    for index, found in ctx.find(_COLLECTING, ("collecting ",)):
        dep, spec_text, by = found.group(1), found.group(2), found.group(3)
        spec = _spec(spec_text)
        gone = next((m for _, m in ctx.find(_UNINSTALL, ("uninstalling ", "existing installation"))
                     if m.group(1).lower() == dep.lower()), None)
        if spec is None or gone is None or spec.contains(gone.group(2).split("+")[0], True):
            continue
        old = gone.group(2)
        torch = dep.lower() == "torch"
        message = (f"{by} requires {dep}{spec}, so pip replaces the installed {dep} {old}"
                   + (" (its torchvision/torchaudio and every extension built for it stop "
                      "matching)" if torch else ""))
        fixes = [Remedy(summary=f"Upgrade {dep}{' with torchvision and torchaudio' if torch else ''}"
                        f" to a release {by} accepts ({dep}{spec}), together and from the index "
                        "of your CUDA, then install it; or install a release of "
                        f"{by} whose requirement admits {dep} {old} (an older one).")]
        return [Signal("resolver_conflict", Category.VERSION_CONFLICT, message,
                       dedupe([ctx.quote(index)]), LOGGED, fixes, details={"source": _SOURCE})]
    return []
