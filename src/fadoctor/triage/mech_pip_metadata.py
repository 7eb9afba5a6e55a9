"""pip 24.1 and later skipping releases whose metadata uses legacy version specifiers: "WARNING:
Ignoring version 2.0.6 of omegaconf since it has invalid metadata: ... .* suffix can only be used
with `==` or `!=` operators PyYAML (>=5.1.*) ... Please use pip<24.1 if you need to use this
version." (pypa/pip src/pip/_internal/resolution/resolvelib/found_candidates.py, which logs it
for each candidate whose metadata raises MetadataInvalid; pip 24.1 dropped legacy versions and
specifiers, its NEWS). With those releases gone, requirements that only they satisfy end in
"ResolutionImpossible" — even where the constraints pip prints in conflict overlap (fairseq's
omegaconf<2.1 and hydra-core's omegaconf<2.1,>=2.0.5 meet at 2.0.5 and 2.0.6), which is how a
report that cut the warnings shows it (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, NAMED, Signal, dedupe

_IGNORED = re.compile(r"Ignoring version (\S{1,40}) of ([\w.-]{1,80}) since it has invalid metadata")
_CONFLICT = re.compile(r"^\s*([\w.-]{1,80}) \S{1,40} depends on ([A-Za-z][\w.-]{0,80})\s*"
                       r"((?:[<>=!~]=?\s*[\w.*+-]{1,40}(?:\s*(?:,|and)\s*)?){1,4})\s*$")
_IMPOSSIBLE = ("resolutionimpossible", "conflicting dependencies")
SOURCE = "pypa/pip src/pip/_internal/resolution/resolvelib/found_candidates.py; pip 24.1 NEWS"
_OLDER_PIP = Remedy(summary="Install with a pip older than 24.1, which still reads those "
                    "releases' legacy metadata (in this environment only; pip 24.0 is the last), "
                    "then install the requirements again; or move the requirement to a release "
                    "of the package whose metadata is valid.",
                    commands=[command("pip", "install", "pip<24.1")])


def invalid_metadata(ctx: Context) -> List[Signal]:
    hit = ctx.first(_IGNORED, ("invalid metadata",))
    if hit is not None:
        version, package = hit[1].group(1), hit[1].group(2)
        return [Signal("pip_invalid_metadata", Category.VERSION_CONFLICT,
                       f"pip skips {package} {version} (and any other release it names so): its "
                       "metadata uses a legacy version specifier, which pip 24.1 and later "
                       "reject", [ctx.quote(hit[0])], NAMED, [_OLDER_PIP],
                       details={"source": SOURCE})]
    if not ctx.text.containing(_IMPOSSIBLE):
        return []
    overlap = _overlapping(ctx)
    if overlap is None:
        return []
    package, specs, lines = overlap
    return [Signal("pip_invalid_metadata", Category.VERSION_CONFLICT,
                   f"the requirements pip reports in conflict meet ({package}{specs}), yet pip "
                   f"found no {package} release there: those releases are ones it skipped, most "
                   "often for metadata with legacy version specifiers that pip 24.1 and later "
                   "reject (\"Ignoring version ... since it has invalid metadata\" above the "
                   "error), or ones with no distribution for this Python",
                   dedupe([ctx.quote(i) for i in lines]), HINTED,
                   [_OLDER_PIP, Remedy(summary=f"To see why pip passes over {package}'s releases "
                                       "there, ask for one verbosely.",
                                       commands=[command("pip", "install", f"{package}{specs}",
                                                         "-v")])],
                   details={"source": SOURCE})]


def _overlapping(ctx: Context) -> Optional[Tuple[str, str, List[int]]]:
    """A package whose constraints in pip's conflict report all admit one version (the bounds
    they name are the candidates tried)."""
    by_package: Dict[str, List[Tuple[SpecifierSet, int]]] = {}
    for index, found in ctx.find(_CONFLICT, ("depends on",)):
        try:
            spec = SpecifierSet(re.sub(r"\s*(?:,|and)\s*", ",", found.group(3).strip()))
        except InvalidSpecifier:
            continue
        by_package.setdefault(found.group(2).lower(), []).append((spec, index))
    for package, specs in by_package.items():
        if len(specs) < 2:
            continue
        combined = SpecifierSet(",".join(str(s) for s, _ in specs))
        if any(combined.contains(v) for v in _candidates(combined)):
            return package, str(combined), [i for _, i in specs]
    return None


def _candidates(specs: SpecifierSet) -> List[Version]:
    out: List[Version] = []
    for spec in specs:
        try:
            version = Version(spec.version.rstrip(".*"))
        except InvalidVersion:
            continue
        out += [version, Version(f"{version.base_version}.1")]
    return out
