"""The install planner that checks and fix share: one helper per fact, read from the matrix."""

from __future__ import annotations

from typing import Optional

import pytest
from packaging.version import Version

from fadoctor.errors import NoPlanError
from fadoctor.facts.model import Family
from fadoctor.fix.solver import Constraints, solve
from fadoctor.install.machine import Machine, WhatIf, apply
from fadoctor.install.torch import (
    TorchBuild,
    cuda_of_variant,
    installed_build,
    torch_index,
    torch_install,
    variant_of_cuda,
)
from fadoctor.install.wheels import first_release_with_kernels, newest_release_with_wheel
from fadoctor.matrix import Matrix, load_matrix


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


@pytest.mark.parametrize(("variant", "cuda"), [("cu118", "11.8"), ("cu121", "12.1"),
                                               ("cu130", "13.0"), ("cu128", "12.8")])
def test_a_variant_and_its_cuda_are_one_fact_both_ways(variant: str, cuda: str) -> None:
    assert cuda_of_variant(variant) == Version(cuda)
    assert variant_of_cuda(cuda) == variant
    assert TorchBuild(Version("2.8.0"), variant, True).cuda == Version(cuda)


def test_the_torch_index_is_written_once() -> None:
    assert torch_install("2.4.0", "cu121") == (
        f"pip install torch==2.4.0+cu121 --index-url {torch_index('cu121')}")
    assert torch_index("cu121").endswith("/whl/cu121")


@pytest.mark.parametrize(("version", "cuda", "abi"), [
    (None, "12.1", True), ("2.4.0", None, True), ("2.4.0", "12.1", None)])
def test_an_installed_build_needs_version_cuda_and_abi(version: Optional[str], cuda: Optional[str],
                                                       abi: Optional[bool]) -> None:
    assert installed_build(Version(version) if version else None, cuda, abi) is None


def test_the_installed_build_drops_the_local_tag() -> None:
    build = installed_build(Version("2.8.0+cu128"), "12.8", True)
    assert build == TorchBuild(Version("2.8.0"), "cu128", True, installed=True)


@pytest.mark.parametrize(("cc", "first"), [("10.0", "2.8.0"), ("12.0", "2.8.0")])
def test_the_first_release_with_blackwell_kernels_comes_from_the_wheels_archs(
        matrix: Matrix, cc: str, first: str) -> None:
    release = first_release_with_kernels(matrix, Version(cc))
    assert release is not None and str(release.version) == first
    # Every older release's wheels lack them (2.7.x: sm_80, sm_90 only).
    older = [r for r in matrix.flash_attn_releases if r.version < release.version]
    assert older and all(not any(a.startswith(f"sm_{cc.replace('.', '')[:-1]}") for a in r.archs)
                         for r in older)


def test_no_release_has_kernels_for_turing(matrix: Matrix) -> None:
    assert first_release_with_kernels(matrix, Version("7.5")) is None


def test_newest_release_with_wheel_matches_the_minor(matrix: Matrix) -> None:
    release = newest_release_with_wheel(matrix, Version("2.4.1+cu121"))
    assert release is not None and "2.4" in release.wheel_torch
    assert newest_release_with_wheel(matrix, Version("1.0")) is None


def test_the_platform_rule_is_the_matrix_entry(matrix: Matrix) -> None:
    m = apply(Machine(), WhatIf(gpu_cc="8.0", python="3.11", driver="570.124.06",
                                platform="linux_aarch64"))
    rel = matrix.torch_release(Version("2.6"))
    assert rel is not None and rel.platform == "linux_x86_64"
    with pytest.raises(NoPlanError) as caught:
        solve(m, Constraints(torch="2.6"), matrix)
    assert f"holds {rel.platform} builds of it only, not linux_aarch64" in str(caught.value)


def test_fa3s_cuda_needs_come_from_the_matrix(matrix: Matrix) -> None:
    m = apply(Machine(), WhatIf(gpu_cc="9.0", python="3.11", driver="580.82.07"))
    plan = solve(m, Constraints(family=Family.FA3, torch="2.8"), matrix)
    # The source build's note (community and Hub picks of FA3 need no nvcc and rank first).
    fa3 = next(p for p in (plan.best, *plan.alternatives)
               if p.family == Family.FA3 and p.kind == "build")
    [req] = [r for r in matrix.requirements(Family.FA3) if r.min_nvcc]
    assert fa3.notes[0].startswith(f"needs CUDA >= {req.min_nvcc} ({req.recommended_nvcc} "
                                   "recommended")
