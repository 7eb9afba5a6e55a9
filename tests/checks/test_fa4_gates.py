"""FAD112 on FlashAttention-4 holds each beta's own gates, by direction: on an A100 its forward
runs and its backward asserts (every beta), so it is not fit for training there; and `fix` plans
neither FA4 for training on 8.x nor a flash-attn 2.x source build that cannot compile."""

from __future__ import annotations

from types import ModuleType

from packaging.version import Version

from fadoctor.checks import BY_KEY
from fadoctor.facts.model import Facts
from fadoctor.install.machine import Machine
from fadoctor.install.torch import TorchBuild
from fadoctor.install.wheels import build_recipe
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Severity

SITE = "/opt/venv/lib/python3.12/site-packages"


def fa4_on(build: ModuleType, gpu: str, cc: str, beta: str) -> Facts:
    devices = [build.gpu(gpu, cc)]
    return build.facts(
        build.host("3.12.3"),
        packages=build.packages(build.dist("torch", "2.11.0+cu130", SITE),
                                build.dist("flash-attn-4", beta, SITE)),
        driver=build.driver("580.82.07", "13.0", devices),
        torch=build.torch("2.11.0+cu130", "13.0", "8.0;9.0;10.0", devices, site=SITE),
        flash=[build.family(build.Family.FA4, beta, build.imported("flash_attn.cute", SITE))])


def gpu_finding(facts: Facts, matrix: Matrix):  # type: ignore[no-untyped-def]
    outcome = BY_KEY["FAD112"].run(facts, matrix)
    assert isinstance(outcome, list)
    [one] = outcome
    return one


def test_on_an_a100_fa4_is_forward_only(build: ModuleType, matrix: Matrix) -> None:
    found = gpu_finding(fa4_on(build, "NVIDIA A100-SXM4-80GB", "8.0", "4.0.0b36"), matrix)
    assert found.severity == Severity.WARNING and found.category == Category.GPU_UNSUPPORTED
    assert "only the forward (inference)" in found.message and "training fails" in found.message
    assert found.evidence["backward_cc_majors"] == [9, 10, 11, 12]


def test_an_early_beta_refuses_an_a100_outright(build: ModuleType, matrix: Matrix) -> None:
    found = gpu_finding(fa4_on(build, "NVIDIA A100-SXM4-80GB", "8.0", "4.0.0b4"), matrix)
    assert found.severity == Severity.ERROR
    assert "forward accepts compute capability 9.x, 10.x, 11.x only" in found.message


def test_on_an_h100_fa4_trains(build: ModuleType, matrix: Matrix) -> None:
    found = gpu_finding(fa4_on(build, "NVIDIA H100 80GB HBM3", "9.0", "4.0.0b36"), matrix)
    assert found.severity == Severity.INFO and "supports" in found.message


def test_no_source_build_is_offered_against_cxx20_headers(matrix: Matrix) -> None:
    machine = Machine(gpu_name="NVIDIA H100", gpu_cc=Version("9.0"), python=Version("3.11"))
    rel, commands = build_recipe(TorchBuild(Version("2.14.1"), "cu130", True), machine, matrix,
                                 None)
    assert rel is None and commands == []
    rel, commands = build_recipe(TorchBuild(Version("2.13.0"), "cu130", True), machine, matrix,
                                 None)
    assert rel is not None and rel.version == Version("2.8.3.post2") and commands


def test_no_source_build_for_sm120(matrix: Matrix) -> None:
    machine = Machine(gpu_name="NVIDIA GeForce RTX 5090", gpu_cc=Version("12.0"),
                      python=Version("3.11"))
    rel, commands = build_recipe(TorchBuild(Version("2.13.0"), "cu130", True), machine, matrix,
                                 None)
    assert rel is None and commands == []  # sm_120 builds crash nvcc (#2361)


def test_releases_newer_than_the_data_are_named_not_refused(build: ModuleType,
                                                              matrix: Matrix) -> None:
    devices = [build.gpu("NVIDIA H100 80GB HBM3", "9.0")]
    facts = build.facts(
        build.host("3.12.3"),
        packages=build.packages(build.dist("torch", "2.16.0+cu140", SITE),
                                build.dist("flash-attn-4", "4.0.0b40", SITE)),
        driver=build.driver("610.10.01", "14.0", devices),
        torch=build.torch("2.16.0+cu140", "14.0", "9.0;10.0", devices, site=SITE),
        flash=[build.family(build.Family.FA4, "4.0.0b40", build.imported("flash_attn.cute", SITE))])
    outcome = BY_KEY["FAD108"].run(facts, matrix)
    assert isinstance(outcome, list)
    newer = {f.subject: f for f in outcome}
    assert set(newer) == {"torch", "flash-attn-4", "CUDA", "NVIDIA driver"}
    for finding in newer.values():
        assert finding.severity == Severity.INFO
        assert f"newer than fadoctor's data of {matrix.data_date}" in finding.message
        assert finding.remedies[0].commands == ["pip install --upgrade fadoctor"]
    # FAD112 judges the unknown beta by the GPU, not by a missing row.
    found = gpu_finding(facts, matrix)
    assert found.severity == Severity.INFO and "supports" in found.message


def test_fa3_requirements_follow_the_release(matrix: Matrix) -> None:
    python = {str(r.min_python) for r in matrix.requirements(build_family("fa3"))
              if r.min_python and r.holds_for(Version("3.0.0"))}
    older = {str(r.min_python) for r in matrix.requirements(build_family("fa3"))
             if r.min_python and r.holds_for(Version("3.0.0b1"))}
    assert python == {"3.10"} and older == {"3.8"}


def build_family(name: str):  # type: ignore[no-untyped-def]
    from fadoctor.facts.model import Family

    return Family(name)


def test_model_advice_says_fa4_cannot_train_on_an_a100(matrix: Matrix) -> None:
    from fadoctor.model.support import fa4_training_problems

    [problem] = fa4_training_problems(matrix, Version("4.0.0b36"), ["8.0"])
    assert "backward (training) refuses sm_80 at 4.0.0b36" in problem
    assert fa4_training_problems(matrix, Version("4.0.0b36"), ["9.0"]) == []
    assert fa4_training_problems(matrix, Version("4.0.0b99"), ["8.0"]) == []  # unknown beta
