"""Which analysed binaries are certain to be loaded, so that only those get error-severity
predictions: a Python extension module is loaded by `import`, a plain shared library only when
something loads it (torch.ops.load_library, ctypes), and of a per-release bundle (one build per
torch release and device, side by side) only the build for the installed torch."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, List, Optional, Sequence, Set, Tuple

from fadoctor.checks.base import info, torch_view
from fadoctor.checks.remedies import remedy
from fadoctor.facts.binaries import BinaryAnalysis
from fadoctor.facts.model import Facts, Torch
from fadoctor.report import Category, Finding, Remedy, Severity
from fadoctor.safety import shell
from fadoctor.safety.shell import command

# A torch release in a file name: torch24, torch2.4, torch2_11, torch210, pt24, pt2.4.
_RELEASE = re.compile(r"(?<![A-Za-z])(?:torch|pt)[-_]?v?([12])[._]?(\d{1,2})(?!\d)", re.I)
# A device in a file name: cpu, cuda, cu124, rocm6.1, hip.
_DEVICE = re.compile(r"(?<![A-Za-z0-9])(cpu|cuda|cu\d{2,3}|rocm[\d.]*|hip)(?![A-Za-z])", re.I)
# What `import name` loads: name.so, name.abi3.so, name.cpython-312-x86_64-linux-gnu.so.
_MODULE_FILE = re.compile(r"^([A-Za-z_]\w*)(?:\.(?:abi3|cpython-[\w-]+))?\.so$")


class Load(Enum):
    CERTAIN = "certain"  # imported, needed by what is, named by hand, or the bundle's build for it
    MAYBE = "maybe"  # loaded only if something loads it: its predictions are at most warnings
    NOT_LOADED = "not loaded"  # a bundle's build for another torch: not judged


@dataclass(frozen=True)
class Judged:
    binary: BinaryAnalysis
    load: Load
    why: str = ""  # for MAYBE: on what its loading depends


@dataclass
class Judgement:
    judged: List[Judged] = field(default_factory=list)  # CERTAIN and MAYBE, in the facts' order
    notes: List[Finding] = field(default_factory=list)  # the bundles: what is loaded, what is not
    no_match: List[Finding] = field(default_factory=list)  # bundles with no build for this torch


def cap(severity: Severity, judged: Judged) -> Severity:
    """An error about a binary that may never be loaded is a warning."""
    if judged.load is Load.MAYBE and severity.rank > Severity.WARNING.rank:
        return Severity.WARNING
    return severity


def judge(facts: Facts, binaries: Sequence[BinaryAnalysis]) -> Judgement:
    """Each binary with how certain it is to be loaded; the bundles' builds for other torch
    releases left out with a note."""
    torch = torch_view(facts)
    bundles = _bundles(binaries)
    member = {id(b): key for key, group in bundles.items() for b in group}
    out = Judgement()
    for key, group in bundles.items():
        _note_bundle(out, key, group, torch)
    by_hand = _named_by_hand(facts)
    certain = {_norm(b.file.path) for b in binaries
               if (_variant(b, torch)[0] if id(b) in member else _own_load(b, by_hand))
               is Load.CERTAIN}
    needed = {_norm(lib.path) for b in binaries if _norm(b.file.path) in certain
              for lib in b.needed if lib.path}
    for binary in binaries:
        if id(binary) in member:
            load, why = _variant(binary, torch)
        elif _norm(binary.file.path) in certain | needed:
            load, why = Load.CERTAIN, ""
        else:
            load, why = Load.MAYBE, ("it is a plain shared library, not a Python extension module: "
                                     "only torch.ops.load_library or ctypes loads it")
        if load is not Load.NOT_LOADED:
            out.judged.append(Judged(binary, load, why))
    return out


def _norm(path: str) -> str:
    return posixpath.normpath(path)


def _named_by_hand(facts: Facts) -> Set[str]:
    files = facts.files.data if facts.files is not None else None
    if files is None:
        return set()
    located = {_norm(f.path) for f in [*files.extensions, *(files.linked or [])]}
    analysed = facts.binaries.data if facts.binaries is not None and facts.binaries.data else []
    return {_norm(b.file.path) for b in analysed} - located


def _own_load(binary: BinaryAnalysis, by_hand: Set[str]) -> Load:
    """A family's extension, a Python extension module and a file named with --extension are
    loaded; else nothing this binary says proves it is."""
    if binary.file.family is not None or binary.file.module is not None:
        return Load.CERTAIN
    if _norm(binary.file.path) in by_hand:
        return Load.CERTAIN
    module = binary.python_module
    if module is None:  # facts recorded before the PyInit_ export was read: the name says it
        module = _MODULE_FILE.match(posixpath.basename(binary.file.path)) is not None
    return Load.CERTAIN if module else Load.MAYBE


def _tags(path: str) -> Tuple[str, Optional[Tuple[int, int]], Optional[str]]:
    """(the name with its release and device blanked, the release, the device)."""
    folder, name = posixpath.split(path)
    release = _RELEASE.search(name)
    device = _DEVICE.search(name)
    key = _RELEASE.sub("{torch}", name)
    key = _DEVICE.sub("{device}", key)
    return (posixpath.join(folder, key),
            (int(release.group(1)), int(release.group(2))) if release else None,
            _device(device.group(1)) if device else None)


def _device(tag: str) -> str:
    tag = tag.lower()
    return "cuda" if tag.startswith("cu") else "rocm" if tag in ("hip",) or tag.startswith(
        "rocm") else "cpu"


def _bundles(binaries: Sequence[BinaryAnalysis]) -> Dict[str, List[BinaryAnalysis]]:
    """Side-by-side builds of one library for several torch releases (and devices): two or
    more files in one folder whose names differ only by those tags, at least one by release."""
    groups: Dict[str, List[BinaryAnalysis]] = {}
    for binary in binaries:
        if binary.file.family is None and binary.file.module is None:
            key, release, _ = _tags(binary.file.path)
            if release is not None:
                groups.setdefault(key, []).append(binary)
    return {k: g for k, g in groups.items()
            if len({_tags(b.file.path)[1] for b in g}) > 1}


def _installed(torch: Optional[Torch]) -> Tuple[Optional[Tuple[int, int]], str]:
    match = re.match(r"(\d+)\.(\d+)", torch.version) if torch and torch.version else None
    release = (int(match.group(1)), int(match.group(2))) if match else None
    return release, ("rocm" if torch and torch.hip else "cuda" if torch and torch.cuda else "cpu")


def _variant(binary: BinaryAnalysis, torch: Optional[Torch]) -> Tuple[Load, str]:
    _, release, device = _tags(binary.file.path)
    have, have_device = _installed(torch)
    if have is None:
        return Load.MAYBE, "one of a set of builds for several torch releases, and this torch's " \
                           "release is unknown"
    if release != have:
        return Load.NOT_LOADED, ""
    if device is None or device == have_device:
        return Load.CERTAIN, ""
    return Load.MAYBE, (f"the {device} build for this torch release, beside which this "
                        f"{have_device} torch loads its {have_device} build")


def _note_bundle(out: Judgement, key: str, group: List[BinaryAnalysis],
                 torch: Optional[Torch]) -> None:
    have, _ = _installed(torch)
    owner = " ".join(filter(None, [group[0].file.distribution, group[0].file.version])) or key
    releases = sorted({r for r in (_tags(b.file.path)[1] for b in group) if r})
    built = ", ".join(f"{a}.{b}" for a, b in releases)
    pattern = posixpath.basename(key)
    skipped = [b.file.path for b in group if _variant(b, torch)[0] is Load.NOT_LOADED]
    if have is not None and have not in releases:
        # A set of plain libraries is loaded by the package's own code, by choice (an optional
        # add-on: torch-c-dlpack-ext's README says tvm-ffi builds one at run time when none
        # fits), so its lack is worth knowing, not a warning; a set of extension modules is not.
        modules = any(_own_load(b, set()) is Load.CERTAIN for b in group)
        out.no_match.append(Finding(
            severity=Severity.WARNING if modules else Severity.INFO,
            category=Category.WRONG_WHEEL if modules else Category.INFO, subject=owner,
            message=f"{owner}: {pattern} is built for torch {built}, none for this torch "
                    f"{have[0]}.{have[1]}: what loads one of them by torch release finds none "
                    "for this one (unless it builds one at run time or does without)",
            evidence={"files": [b.file.path for b in group], "torch": f"{have[0]}.{have[1]}"},
            remedies=_newer(group[0])))
    if skipped and have is not None:
        out.notes.append(info(
            f"{owner}: {len(skipped)} of its {len(group)} builds of {pattern} are for other torch "
            f"releases ({built}) and are not loaded with torch {have[0]}.{have[1]}: not judged",
            not_loaded=skipped))


def _newer(binary: BinaryAnalysis) -> List[Remedy]:
    dist = binary.file.distribution
    if dist is None:
        return []
    return [remedy(f"A newer {dist} may carry a build for this torch release.",
                   lambda: [command("pip", "install", "--upgrade", shell.name(dist))])]
