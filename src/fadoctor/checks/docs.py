"""The matrix's figures that the checks' documentation quotes ({name} in `Check.doc`), filled in
when `fadoctor explain` shows it, so that no figure the matrix holds is written twice."""

from __future__ import annotations

from typing import Dict

from fadoctor.checks.base import Check
from fadoctor.facts.model import Family
from fadoctor.matrix import Matrix


def doc_terms(matrix: Matrix) -> Dict[str, str]:
    fa3 = matrix.requirements(Family.FA3)
    fa4 = matrix.requirements(Family.FA4)
    return {
        "driver_floors": ", ".join(f"{f.cuda_major}.x: {f.min_driver}"
                                   for f in matrix.cuda_driver.floors),
        "fa2_min_cc": str(matrix.family_support(Family.FA2).min_cc),
        "fa2_gates": "; ".join(
            f"releases {g.versions} accept only "
            + "/".join(f"sm{major}x" for major in g.allowed_cc_majors)
            for g in matrix.fa2_arch_gate),
        "fa3_min_torch": " ".join(str(r.min_torch) for r in fa3 if r.min_torch) or "?",
        "fa4_min_python": " ".join(str(r.min_python) for r in fa4 if r.min_python) or "?",
    }


def documentation(check: Check, matrix: Matrix) -> str:
    """The check's documentation with the matrix's figures in place."""
    return check.doc.format(**doc_terms(matrix))
