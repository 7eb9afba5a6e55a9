"""pip replacing the installed torch while installing a package with compiled torch extensions
(xformers, vLLM, torchvision, torchaudio), or finding no torch the package asks for ("No matching
distribution found for torch>=2.8 (from xformers)"): that release requires another torch; its
release whose metadata requires the installed torch keeps it (data/ext_torch.yaml) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.report import Category
from fadoctor.triage import ext_torch
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal

# pip's own lines (pip/_internal/operations/install: "Attempting uninstall: {name}",
# "Found existing installation: {dist}", "Uninstalling {dist}:")
_UNINSTALLING = re.compile(r"(?:Found existing installation: torch |Uninstalling torch-)"
                           r"(\d+\.\d+(?:\.\d+)?(?:\+\w+)?)")
_NO_TORCH = re.compile(r"(?:satisfies the requirement|distribution found for) torch\s?([<>=!~][^\s()]{1,40})"
                       r"(?:\s?\(from ([\w.-]{1,60})\))?")
_INSTALL = re.compile(r"\b(?:pip3?|uv pip) install\b[^\n]{0,300}")


def _installing(ctx: Context) -> Optional[Tuple[int, str]]:
    """The line that asks pip for a package whose torch pins the table holds."""
    known = ext_torch.table()
    for index, found in ctx.find(_INSTALL, ("install",)):
        words = re.findall(r"[\w.=-]+", found.group(0).lower())
        if any(w.split("==")[0] == "torch" for w in words):
            continue  # torch asked for by name: replacing it is what the command says
        name = next((w for w in words if w.split("==")[0] in known and w != "torch"), None)
        if name is not None:
            return index, name.split("==")[0]
    return None


def replaced(ctx: Context) -> List[Signal]:
    gone = ctx.first(_UNINSTALLING, ("existing installation: torch", "uninstalling torch-"))
    asked = _installing(ctx) if gone is not None else None
    if gone is None or asked is None:
        return []
    torch, package = gone[1].group(1), asked[1]
    fixes = ext_torch.remedies(package, None, torch)
    if not fixes:
        return []
    return [Signal("replaced_torch", Category.VERSION_CONFLICT,
                   f"pip replaced torch {torch} to install {package}: the {package} release it "
                   "picked requires another torch (its wheel metadata)",
                   sorted({ctx.quote(asked[0]), ctx.quote(gone[0])}, key=lambda q: q.line), LOGGED,
                   fixes, details={"source": "data/ext_torch.yaml (the index's wheel metadata)"})]


def unmet(ctx: Context) -> List[Signal]:
    """pip finds no torch the package's release asks for: with the stated torch, the release of
    that package whose metadata requires it."""
    found = list(ctx.find(_NO_TORCH, ("requirement torch", "found for torch")))
    if not found or ctx.torch is None:
        return []
    index, match = next(((i, m) for i, m in found if m.group(2)), found[0])
    package = (match.group(2) or "").lower()
    if package not in ext_torch.table():
        asked = _installing(ctx)
        package = asked[1] if asked is not None else ""
    fixes = ext_torch.remedies(package, None, str(ctx.torch)) if package else []
    if not fixes:
        return []
    return [Signal("replaced_torch", Category.VERSION_CONFLICT,
                   f"the {package} being installed requires torch{match.group(1)}, and torch "
                   f"{ctx.torch} is installed: that {package} is written for another torch",
                   sorted({ctx.quote(index), *ctx.quotes("torch")}, key=lambda q: q.line), LOGGED,
                   fixes, details={"source": "data/ext_torch.yaml (the index's wheel metadata)"})]
