"""pip finding releases of a package, but none that satisfies the request: "Could not find a
version that satisfies the requirement torch==2.6.0 (from versions: 2.0.0, ..., 2.2.2)" (pip's
resolver prints what the index offers this interpreter and platform). When every release it
lists is older than the one asked for, the newer releases publish no wheel this platform and
Python can take: the newest listed is the last one that does (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fadoctor.install.torch import cuda_of_variant, torch_index
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import mech_wheel_tags
from fadoctor.triage.context import Context
from fadoctor.triage.mech_windows import MAC
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_LISTED = re.compile(r"Could not find a version that satisfies the requirement "
                     r"([A-Za-z0-9][\w.-]{0,60})\s*(?:\[[\w,-]+\])?\s*"
                     r"((?:[<>=!~]=?=?\s*[\w.*+]+\s*(?:,\s*)?){1,4})[^\n]{0,60}?"
                     r"\(from versions: ([^)]{1,4000})\)")
_REQUIRED_BY = re.compile(r"\(from ([A-Za-z0-9][\w.-]{0,60})")


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
    package, asked, listed = hit[1].group(1), hit[1].group(2).strip().rstrip(","), hit[1].group(3)
    if "/whl/rocm" not in ctx.text.joined.lower() and mech_wheel_tags.no_file(ctx):
        return []  # the index's own file list answers it exactly
    try:
        wanted = SpecifierSet(asked.replace(" ", ""))
    except InvalidSpecifier:
        return []
    versions = _listed(listed)
    lowest = min((Version(s.version) for s in wanted if s.operator in ("==", ">=", "~=", ">")
                  and "*" not in s.version), default=None)
    if not versions or lowest is None or any(wanted.contains(v, prereleases=True)
                                             for v in versions):
        return []
    newest, oldest = max(versions), min(versions)
    if newest < lowest:
        return _newer(ctx, hit, package, lowest, newest)
    if oldest > lowest and all(s.operator in ("==", "~=") for s in wanted):
        return _older(ctx, hit, package, lowest, oldest)
    below = [v for v in versions if v < lowest]
    above = [v for v in versions if v > lowest]
    return _between(ctx, hit, package, asked, max(below), min(above)) if below and above else []


# The ROCm build PyTorch's install pages list for each torch release (pytorch/pytorch.github.io
# _get_started/previous-versions.md at e3f009bb for 1.12.0 to 2.3.1; its commits 6286469 for
# 2.4.0, e08a598 for 2.6.0; the page as published for 2.9.0 and 2.9.1). Releases not listed here
# are not known to fadoctor.
_ROCM_OF = {"1.12": ("rocm5.1.1",), "1.13": ("rocm5.2",), "2.0": ("rocm5.4.2",),
            "2.1": ("rocm5.6",), "2.2.0": ("rocm5.6",), "2.2.1": ("rocm5.7",),
            "2.2.2": ("rocm5.7",), "2.3": ("rocm6.0",), "2.4.0": ("rocm6.1",),
            "2.6": ("rocm6.1", "rocm6.2.4"), "2.9": ("rocm6.4",)}
_ROCM_INDEX = re.compile(r"/whl/(rocm\d+(?:\.\d+){1,2})\b")


def _rocm_builds(version: Version) -> Tuple[str, ...]:
    return _ROCM_OF.get(str(version)) or _ROCM_OF.get(f"{version.major}.{version.minor}") or ()


def _newer(ctx: Context, hit: Tuple[int, re.Match[str]], package: str, wanted: Version,
           newest: Version) -> List[Signal]:
    rocm = ctx.first(_ROCM_INDEX, ("/whl/rocm",)) if package.lower() == "torch" else None
    if rocm is not None:  # a ROCm index ends where PyTorch moved to a newer ROCm
        builds = _rocm_builds(wanted)
        return [Signal("newer_than_listed", Category.WRONG_WHEEL,
                       f"the {rocm[1].group(1)} index holds torch up to {newest}: torch {wanted} "
                       "was built for a later ROCm"
                       + (f" ({', '.join(builds)})" if builds else ""),
                       dedupe([ctx.quote(hit[0]), ctx.quote(rocm[0])]), LOGGED,
                       [Remedy(summary=f"Install torch {wanted} from the ROCm index of the ROCm "
                               "release it was built for"
                               + (f": {builds[-1]}" if builds else " (PyTorch's previous-versions "
                                  "page names it)") + ", with torchvision/torchaudio from the same "
                               "index; or keep this ROCm index with torch "
                               f"{newest}.", commands=[command(
                                   "pip", "install", f"torch=={wanted}", "--index-url",
                                   torch_index(builds[-1]))] if builds else [])])]
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


def _between(ctx: Context, hit: Tuple[int, re.Match[str]], package: str, asked: str,
             below: Version, above: Version) -> List[Signal]:
    """pip lists releases on both sides of the range asked for and none inside it: the releases
    in the range published no wheel for this interpreter or platform (a package with compiled
    wheels per Python: spconv's `cumm<0.5.0,>=0.4.5` where only 0.1.0 and 0.5.x fit)."""
    by = _REQUIRED_BY.search(ctx.text.lines[hit[0]][hit[1].end(2):])
    owner = by.group(1) if by else None
    return [Signal("none_in_range", Category.WRONG_WHEEL,
                   f"the index lists {package} {below} and {above} for this interpreter but no "
                   f"release in {asked}" + (f" (which {owner} requires)" if owner else "")
                   + f": the {package} releases in that range publish no wheel for this Python "
                   "or platform (pip lists only releases with a file this interpreter can "
                   "install)", [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary=f"Create the environment with an older Python (downgrade "
                           f"Python) that the {package} releases in {asked} have wheels for "
                           "(their files on the index name the cp3XX tags), or install "
                           + (f"a release of {owner} whose requirement allows {package} "
                              f"{above}" if owner else
                              f"{package} {above} with the packages pinned to match it")
                           + ".")],
                   details={"source": "pip's resolver lists only the releases with a file this "
                                      "interpreter and platform can install"})]


# A torch install from PyTorch's index for a CUDA variant it never published: "--index-url
# .../whl/cu131" answers "(from versions: none)". Each release's variants are the matrix's
# (data/compat_matrix.yaml torch_releases, read from the wheels and RELEASE.md).
_VARIANT_INDEX = re.compile(r"--(?:extra-)?index-url\s+\S{1,200}/whl/(cu\d{3})\b")
_TORCH_PIN = re.compile(r"\btorch==(\d+\.\d+(?:\.\d+)?)")
_NONE_FOR_TORCH = re.compile(r"(?:satisfies the requirement|distribution found for) torch\b"
                             r"[^\n]{0,40}(?:\(from versions: none\)|$)")


def unpublished_variant(ctx: Context) -> List[Signal]:
    failed = ctx.first(_NONE_FOR_TORCH, ("requirement torch", "found for torch"))
    index = ctx.first(_VARIANT_INDEX, ("/whl/cu",)) if failed is not None else None
    if failed is None or index is None:
        return []
    variant = index[1].group(1)
    pin = _TORCH_PIN.search(ctx.text.lines[index[0]]) or _TORCH_PIN.search(
        ctx.text.lines[failed[0]])
    wanted = Version(pin.group(1)) if pin else None
    release = ctx.matrix.torch_release(wanted) if wanted is not None else None
    built = list(release.cuda_variants) if release is not None else sorted(
        {v for r in ctx.matrix.torch_releases for v in r.cuda_variants})
    cuda = cuda_of_variant(variant)
    # a release the matrix does not hold (torch 1.x's cu116), or a variant older than its
    # oldest: what was built there is not known here
    if variant in built or not built or (wanted is not None and release is None) \
            or cuda < min(cuda_of_variant(v) for v in built):
        return []
    below = [v for v in built if cuda_of_variant(v) <= cuda]
    pick = max(below or built, key=cuda_of_variant)
    what = f"torch {wanted}" if wanted is not None else "torch"
    spec = f"torch=={wanted}" if wanted is not None else "torch"
    return [Signal("unpublished_variant", Category.WRONG_WHEEL,
                   f"PyTorch's index has no {variant} build of {what}: "
                   + (f"torch {release.minor} was built for {', '.join(built)}" if release
                      else f"no torch release was built for {variant}")
                   + ", so pip finds nothing there", dedupe([ctx.quote(index[0]),
                                                              ctx.quote(failed[0])]), LOGGED,
                   [Remedy(summary=f"Install {what} from the {pick} index (CUDA "
                           f"{cuda_of_variant(pick)}, which a driver for CUDA {cuda} runs too).",
                           commands=[command("pip", "install", spec, "--index-url",
                                             torch_index(pick))])],
                   details={"source": "data/compat_matrix.yaml torch_releases (cuda_variants)"})]


# Poetry's installer finding a release's wheels but none for this environment ("Unable to find
# installation candidates for torch (2.5.1)" ... "17 wheel(s) were skipped as your project's
# environment does not support the identified abi tags"). torch's macOS x86_64 wheels end at
# 2.2.2 (the package index lists none later for macosx_*_x86_64), so a Python torch supports that
# still gets no wheel is most often an Intel Mac.
_POETRY = re.compile(r"Unable to find installation candidates for ([A-Za-z0-9][\w.-]{0,60}) "
                     r"\((\d[\w.+]*)\)")
_SKIPPED = re.compile(r"wheel\(s\) were skipped as your project's environment does not support "
                      r"the identified abi tags")
_LAST_INTEL_MAC_TORCH = "2.2.2"


def poetry_no_candidate(ctx: Context) -> List[Signal]:
    hit = ctx.first(_POETRY, ("unable to find installation candidates",))
    skipped = ctx.first(_SKIPPED, ("identified abi tags",)) if hit is not None else None
    if hit is None or skipped is None:
        return []
    package, asked = hit[1].group(1), hit[1].group(2)
    quotes = dedupe([ctx.quote(hit[0]), ctx.quote(skipped[0]), *ctx.quotes("python")])
    release = ctx.matrix.torch_release(Version(asked)) if package.lower() == "torch" and \
        re.fullmatch(r"\d+\.\d+(?:\.\d+)?", asked) else None
    python = str(ctx.seen.get("python") or "")
    minor = ".".join(python.split(".")[:2])
    if release is not None and minor and minor not in release.python:
        return [Signal("poetry_no_candidate", Category.WRONG_WHEEL,
                       f"torch {asked} publishes no wheel for Python {minor} (its wheels are for "
                       f"Python {', '.join(p for p in release.python if p[-1:].isdigit())})",
                       quotes, LOGGED,
                       [Remedy(summary=f"Use a Python torch {asked} supports for the project's "
                               "environment (poetry env use python3.X), or a torch release "
                               f"with wheels for Python {minor}.")])]
    if release is not None:
        return [Signal("poetry_no_candidate", Category.PLATFORM_UNSUPPORTED,
                       f"torch {asked} has wheels for Python {minor or 'this version'}, but none "
                       "for this platform: an Intel (x86_64) Mac gets torch only up to "
                       f"{_LAST_INTEL_MAC_TORCH} (or a 32-bit or other unsupported system)",
                       quotes, LOGGED,
                       [Remedy(summary=f"On an Intel Mac, pin torch {_LAST_INTEL_MAC_TORCH}, "
                               "the last release with macOS x86_64 wheels (and the packages "
                               "that need a newer torch to releases that accept it), or run on "
                               "an Apple Silicon Mac, Linux or Windows.",
                               commands=[command("poetry", "add",
                                                 f"torch=={_LAST_INTEL_MAC_TORCH}")])])]
    return [Signal("poetry_no_candidate", Category.WRONG_WHEEL,
                   f"{package} {asked} publishes no wheel for this environment's Python and "
                   "platform (Poetry skipped each of its wheels for its tags)", quotes, LOGGED,
                   [Remedy(summary=f"Use a Python and platform {package} {asked} has wheels for "
                           "(its files on the index name the cpXY and platform tags), or a "
                           f"release of {package} with wheels for this one.")])]


# A requirements file line carrying an install option pip takes only on its command line:
# "ERROR: Invalid requirement: flash-attn --no-build-isolation" (pip's requirements-file parser
# accepts a short list of per-line options; --no-build-isolation is not one of them)
_LINE_OPTION = re.compile(r"Invalid requirement: ['\"]?([A-Za-z0-9][\w.\[\],<>=!~-]{0,80}?)\s+"
                          r"(--no-build-isolation|--no-deps|--no-binary\S*)")


def requirement_with_option(ctx: Context) -> List[Signal]:
    hit = ctx.first(_LINE_OPTION, ("invalid requirement",))
    if hit is None:
        return []
    package, option = hit[1].group(1), hit[1].group(2)
    name = re.split(r"[\[<>=!~]", package, maxsplit=1)[0]
    return [Signal("requirement_option", Category.BUILD_ISOLATION if "isolation" in option
                   else Category.VERSION_CONFLICT,
                   f"the requirements file writes {option} on {package}'s line, which pip's "
                   "requirements parser does not accept there: the whole install stops",
                   [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary=f"Take {package} (with {option}) out of the requirements file "
                           "and install it in its own step after the others (torch first, for "
                           "a build that needs it).",
                           commands=["pip install -r requirements.txt",
                                     command("pip", "install", package, option)]
                           if re.fullmatch(r"[A-Za-z0-9][\w.-]*", name) else [])])]


# pip from 20.3 (the new resolver) refusing a wheel whose file name's version differs from its
# METADATA's: "Requested X==0.2.1+torch13.cuda101 from URL has different version in metadata:
# '0.2.1'" (20.3's wording), "Requested X from URL has inconsistent version: expected '...', but
# metadata has '...'" (later releases; pypa/pip src/pip/_internal/exceptions.py MetadataInconsistent)
_INCONSISTENT = re.compile(r"Requested ([A-Za-z0-9][\w.-]{0,60})(?:==[\w.+!-]{1,60})? from \S{1,800} "
                           r"has (?:different version in metadata|inconsistent version)")


def metadata_inconsistent(ctx: Context) -> List[Signal]:
    hit = ctx.first(_INCONSISTENT, ("different version in metadata", "inconsistent version"))
    if hit is None:
        return []
    package = hit[1].group(1)
    return [Signal("metadata_version", Category.VERSION_CONFLICT,
                   f"pip refuses the {package} wheel: its file name's version (with a local label "
                   "such as +torch13.cuda101) differs from the version its metadata declares, which "
                   "pip accepts only before 20.3", [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary="Install that wheel with a pip older than 20.3 (in this "
                           f"environment only), or take a {package} release whose wheels declare "
                           "the same version in both (the project's newer wheels or its own "
                           "index).", commands=[command("pip", "install", "pip<20.3")])],
                   details={"source": "pypa/pip src/pip/_internal/exceptions.py "
                                      "(MetadataInconsistent)"})]
