"""A run-time failure with a flash-attention release the report states, and a known defect of that
release (the matrix's known_defects, each from the upstream commit that fixed it) whose
conditions the stated machine does not rule out: the defect, and the release that fixes it.
FlashAttention-3 and flash-attn-4 here; flash-attn 2.x's defects are read by the mechanisms of
their own messages (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from fadoctor.facts.model import Family
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import IMPLIED, Signal, dedupe
from fadoctor.triage.text import Quote

_FAMILIES: Tuple[Tuple[Family, Tuple[str, ...], str], ...] = (
    (Family.FA4, ("flash-attn-4", "flash_attn_4"), "flash-attn-4"),
    (Family.FA3, ("flash-attn-3", "flash_attn_3"), "flash-attn-3"),
)
# a failure at run time, as printed
_FAILED = re.compile(r"CUDA Error|cudaError\w+|CUDA error|illegal memory access|\w+Error\b|"
                     r"\bnan\b|launch failed|Verification failed", re.I)
_RUN_CATEGORIES = (Category.KERNEL_FAILURE, Category.NUMERICS, Category.HEAD_DIM_UNSUPPORTED)


def stated_release(ctx: Context) -> List[Signal]:
    failed = ctx.first(_FAILED, ("cuda error", "cudaerror", "illegal memory", "error", "nan",
                                 "launch failed", "verification failed"))
    if failed is None:
        return []
    for family, names, display in _FAMILIES:
        stated = _stated(ctx, names)
        if stated is None:
            continue
        version, quote = stated
        out = []
        for defect in ctx.matrix.defects_for(version, family):
            if defect.stage != "run" or defect.category not in _RUN_CATEGORIES:
                continue
            if defect.matches(ctx.torch, ctx.gpu_cc_exact, ctx.driver, cxx11_abi=ctx.torch_abi,
                              glibc=ctx.glibc, torch_cuda=ctx.torch_cuda) is False:
                continue
            when = f" It bites when: {defect.only_when}." if defect.only_when else ""
            out.append(Signal(
                "known_defect", defect.category,
                f"{display} {version} has a known defect ({defect.id}): {defect.summary}",
                dedupe([ctx.quote(failed[0]), quote, *([ctx.gpu[2]] if ctx.gpu else [])]),
                IMPLIED, [Remedy(summary=f"{defect.remedy}{when}",
                                 commands=_upgrade(ctx, family, display, defect.versions))],
                details={"source": defect.source}))
        if out:  # a defect of the pass the report runs (its backward or not) first
            backward = bool(ctx.text.containing(("backward",)))
            return sorted(out, key=lambda sig: ("backward" in sig.message) != backward)
    return []


def _upgrade(ctx: Context, family: Family, display: str, versions: SpecifierSet) -> List[str]:
    """The install command of the first published release past the defect's last (flash-attn-4's
    releases are in the matrix; FA3 has none on the index, so no command)."""
    if family != Family.FA4:
        return []
    published = sorted(r.version for r in ctx.matrix.fa4_releases)
    bitten = [v for v in published if versions.contains(v, prereleases=True)]
    after = [v for v in published if bitten and v > bitten[-1]]
    return [command("pip", "install", "--upgrade", f"{display}>={after[0]}")] if after else []


def _stated(ctx: Context, names: Tuple[str, ...]) -> Optional[Tuple[Version, Quote]]:
    stated = ctx.package(*names)
    if stated is None:
        return None
    try:
        return Version(stated.value), stated.quote
    except InvalidVersion:
        return None
