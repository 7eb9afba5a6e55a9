"""The checks' documentation quotes the matrix's figures; none is written into a doc by hand."""

from __future__ import annotations

import re

from fadoctor.checks import ALL_CHECKS, BY_KEY
from fadoctor.checks.docs import documentation
from fadoctor.facts.model import Family
from fadoctor.matrix import load_matrix


def test_every_doc_is_filled_from_the_matrix() -> None:
    matrix = load_matrix()
    for check in ALL_CHECKS:
        text = documentation(check, matrix)
        assert text and "{" not in text and "}" not in text, check.id


def test_driver_floors_and_requirements_come_from_the_matrix() -> None:
    matrix = load_matrix()
    fad104 = documentation(BY_KEY["FAD104"], matrix)
    assert all(f"{f.cuda_major}.x: {f.min_driver}" in fad104 for f in matrix.cuda_driver.floors)
    fad113 = documentation(BY_KEY["FAD113"], matrix)
    [fa3_torch] = [r.min_torch for r in matrix.requirements(Family.FA3) if r.min_torch]
    [fa4_python] = [r.min_python for r in matrix.requirements(Family.FA4) if r.min_python]
    assert f"torch >= {fa3_torch}" in fad113 and f"Python >= {fa4_python}" in fad113
    fad112 = documentation(BY_KEY["FAD112"], matrix)
    assert all(str(g.versions) in fad112 for g in matrix.fa2_arch_gate)


def test_no_doc_writes_a_driver_version_by_hand() -> None:
    for check in ALL_CHECKS:
        assert not re.search(r"\b[45]\d\d\b", check.doc), check.id
