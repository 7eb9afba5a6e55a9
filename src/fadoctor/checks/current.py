"""FAD108: releases newer than fadoctor's data. A release the matrix has no row for is reported
as newer than the data of its date; the other checks judge it by what the machine shows
(binaries, imports, kernels), never as unsupported for a missing row."""

from __future__ import annotations

from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.checks.base import Outcome, info, release, version
from fadoctor.facts.model import Facts, Family
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity
from fadoctor.safety.shell import command


def _newest(matrix: Matrix) -> List[Tuple[str, Version]]:
    """(what, the newest release the data knows) for each part of the stack."""
    return [
        ("torch", max(Version(r.minor) for r in matrix.torch_releases)),
        ("flash-attn", max(r.version for r in matrix.flash_attn_releases)),
        ("flash-attn-4", max(r.version for r in matrix.fa4_releases)),
        ("CUDA", max(t.cuda for t in matrix.cuda_driver.toolkits)),
        ("NVIDIA driver", max(Version(str(t.min_driver).split(".")[0])
                              for t in matrix.cuda_driver.toolkits)),
    ]


def _seen(facts: Facts) -> List[Tuple[str, Optional[Version], Optional[Version]]]:
    """(what, the version here, the version compared) for the parts this machine shows."""
    torch = facts.torch.data
    driver = facts.driver.data
    tv = version(torch.version if torch else None)
    fa = {f.family: version(f.version) for f in facts.flash_attention if f.installed}
    dv = version(driver.version if driver else None)
    cuda = version(torch.cuda if torch else None)
    return [
        ("torch", tv, release(tv) if tv else None),
        ("flash-attn", fa.get(Family.FA2), fa.get(Family.FA2)),
        ("flash-attn-4", fa.get(Family.FA4), fa.get(Family.FA4)),
        ("CUDA", cuda, release(cuda) if cuda else None),
        ("NVIDIA driver", dv, Version(str(dv.major)) if dv else None),
    ]


def check_data_current(facts: Facts, matrix: Matrix) -> Outcome:
    when = matrix.data_date or "unknown date"
    newest = dict(_newest(matrix))
    findings: List[Finding] = []
    for what, here, key in _seen(facts):
        if here is None or key is None or key <= newest[what]:
            continue
        findings.append(Finding(
            severity=Severity.INFO, category=Category.INFO, subject=what,
            message=f"{what} {here} is newer than fadoctor's data of {when} (newest known: "
                    f"{newest[what]}): it is judged by what this machine shows, not by the matrix",
            evidence={"installed": str(here), "newest_in_data": str(newest[what]),
                      "data_date": matrix.data_date},
            remedies=[Remedy(summary="A newer fadoctor may know this release (upgrade it the "
                             "way it was installed: pip, pipx or uv tool).",
                             commands=[command("pip", "install", "--upgrade", "fadoctor")])]))
    return findings or [info(f"every release here is within fadoctor's data of {when}",
                             data_date=matrix.data_date)]
