"""FAD113: each installed flash-attention family's torch and Python requirements, its install
extras, and whether flash-attn 2.x has a prebuilt wheel for the installed torch."""

from __future__ import annotations

from typing import List

from packaging.version import Version

from fadoctor.checks.base import Outcome, Skip, info, release, version, why_unknown
from fadoctor.checks.flash import installed, label
from fadoctor.checks.remedies import remedy
from fadoctor.facts.model import Facts, Family, FlashAttention
from fadoctor.matrix import Matrix
from fadoctor.matrix.models import FamilyRequirement
from fadoctor.report import Category, Finding, Severity
from fadoctor.safety.shell import command, requirement


def check_requirements(facts: Facts, matrix: Matrix) -> Outcome:
    present = installed(facts)
    if not present:
        return Skip("needs an installed flash-attention family, and none is installed")
    torch = facts.torch.data
    if torch is None:
        return why_unknown("torch", facts.torch)
    tv = version(torch.version)
    if tv is None:
        return Skip(f"needs a readable torch version; got {torch.version!r}")
    findings: List[Finding] = []
    for fa in present:
        findings.extend(_requirement_findings(fa, tv, facts, matrix))
    return findings


def _requirement_findings(fa: FlashAttention, tv: Version, facts: Facts, matrix: Matrix
                          ) -> List[Finding]:
    what = label(fa, matrix)
    out: List[Finding] = []
    verified: List[str] = []
    py = version(facts.host.data.python_version if facts.host.data else None)
    for req in matrix.requirements(fa.family):
        if not req.holds_for(version(fa.version)):
            continue
        if req.min_torch is not None:
            if tv < req.min_torch:
                out.append(_unmet(fa, f"{what} needs torch >= {req.min_torch}; this is {tv}",
                                  Category.TORCH_VERSION_MISMATCH, req.source, torch=str(tv)))
            else:
                verified.append(f"torch >= {req.min_torch}")
        if req.min_python is not None and py is not None:
            if py < req.min_python:
                out.append(_unmet(fa, f"{what} needs Python >= {req.min_python}; this is {py}",
                                  Category.PLATFORM_UNSUPPORTED, req.source, python=str(py)))
            else:
                verified.append(f"Python >= {req.min_python}")
        if req.extra is not None:
            out.extend(_extra_finding(fa, req, facts))
    if fa.family == Family.FA2:
        out.extend(_fa2_release_findings(fa, tv, matrix))
    elif verified:
        out.append(info(f"{what}: requirements hold ({', '.join(verified)})"))
    return out or [info(f"{what}: fadoctor's matrix lists no torch or Python requirement")]


def _unmet(fa: FlashAttention, message: str, category: Category, source: str,
           **evidence: object) -> Finding:
    return Finding(severity=Severity.ERROR, category=category, subject=fa.family.value,
                   message=message, evidence={**evidence, "source": source})


def _extra_finding(fa: FlashAttention, req: FamilyRequirement, facts: Facts) -> List[Finding]:
    """An install extra the family documents for this CUDA major (FA4's [cu13]), if not taken."""
    torch, packages = facts.torch.data, facts.packages.data
    cuda = version(torch.cuda if torch else None)
    if cuda is None or packages is None or cuda.major != req.cuda_major or req.extra_marker is None:
        return []
    if packages.get(req.extra_marker) is not None:
        return [info(f"{fa.distribution} has its [{req.extra}] extra for CUDA {cuda.major}")]
    return [Finding(
        severity=Severity.INFO, category=Category.INFO, subject=fa.family.value,
        message=f"torch uses CUDA {torch.cuda if torch else cuda}, but {fa.distribution} was "
                f"installed without its [{req.extra}] extra ({req.extra_marker} is absent)",
        evidence={"source": req.source},
        remedies=[remedy(f"Its documentation asks for the [{req.extra}] extra on CUDA "
                         f"{cuda.major}.", lambda: [command("pip", "install", requirement(
                             fa.distribution or "", fa.version, extras=[req.extra or ""]))])])]


def _fa2_release_findings(fa: FlashAttention, tv: Version, matrix: Matrix) -> List[Finding]:
    what, minor = label(fa, matrix), str(release(tv))
    fv = version(fa.version)
    rel = matrix.fa_release(fv) if fv is not None else None
    if rel is None:
        return [info(f"{what} is not a tagged flash-attn release fadoctor knows (a fork, a dev "
                     "build or newer than the matrix)", version=fa.version)]
    out: List[Finding] = []
    if tv < rel.readme_min_torch:
        out.append(Finding(
            severity=Severity.WARNING, category=Category.TORCH_VERSION_MISMATCH,
            subject=fa.family.value,
            message=f"{what} documents torch >= {rel.readme_min_torch}; this is {tv}",
            evidence={"torch": str(tv), "source": rel.source}))
    if minor in rel.wheel_torch:
        out.append(info(f"{what} has prebuilt wheels for torch {minor}",
                        wheel_torch=rel.wheel_torch, source=rel.source))
    else:
        out.append(info(f"{what} has no prebuilt wheel for torch {minor} (wheels: "
                        f"{', '.join(rel.wheel_torch)}): this copy was compiled here or taken from "
                        "another torch, and must be rebuilt after every torch upgrade",
                        wheel_torch=rel.wheel_torch, source=rel.source))
    return out
