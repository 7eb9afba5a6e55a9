"""FAD111 on a family that does not import because a requirement it declares is missing: the
unmet requirement named from Requires-Dist, and the command that installs it."""

from __future__ import annotations

from types import ModuleType
from typing import List

import pytest

from fadoctor.checks import BY_KEY
from fadoctor.checks.dependencies import unmet_requirements
from fadoctor.facts.model import Distribution, Facts
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding

SITE = "/opt/venv/lib/python3.12/site-packages"
FA4 = "4.0.0b36"
# flash-attn-4 4.0.0b36's requirements, as its METADATA writes them (shortened).
REQUIRES = ["nvidia-cutlass-dsl>=4.4.2", "torch", "einops",
            'nvidia-cutlass-dsl[cu13]>=4.4.2; extra == "cu13"',
            'pytest; extra == "dev"', 'einops; python_version < "3.8"']
NO_CUTLASS = "No module named 'cutlass'"


def fa4_facts(build: ModuleType, cuda: str, *others: Distribution,
              requires: List[str] = REQUIRES) -> Facts:
    fa4 = build.dist("flash-attn-4", FA4, SITE).model_copy(update={"requires": requires})
    torch = f"2.11.0+cu{cuda.replace('.', '')}"
    return build.facts(
        build.host("3.12.3"),
        packages=build.packages(build.dist("torch", torch, SITE), build.dist("einops", "0.8.1", SITE),
                                fa4, *others),
        driver=build.driver("580.82.07", "13.0", [build.gpu("NVIDIA H200", "9.0")]),
        torch=build.torch(torch, cuda, "9.0;10.0", [build.gpu("NVIDIA H200", "9.0")],
                          cxx11_abi=True, site=SITE),
        flash=[build.family(build.Family.FA4, FA4, build.import_failed(
            build.failed(NO_CUTLASS, exception_type="ModuleNotFoundError")))])


def finding(facts: Facts, matrix: Matrix) -> Finding:
    outcome = BY_KEY["FAD111"].run(facts, matrix)
    assert isinstance(outcome, list)
    [one] = outcome
    return one


def test_on_cuda_13_the_family_is_reinstalled_with_its_cu13_extra(build: ModuleType,
                                                                  matrix: Matrix) -> None:
    found = finding(fa4_facts(build, "13.0"), matrix)
    assert found.category == Category.NOT_INSTALLED
    assert "cutlass" in found.message
    # The base requirement and the [cu13] one merge into one: extras and specifiers together.
    assert "nvidia-cutlass-dsl[cu13]>=4.4.2, which is not installed" in found.message
    assert found.remedies[0].commands == [f'pip install "flash-attn-4[cu13]=={FA4}"']
    assert found.remedies[1].commands == ['pip install "nvidia-cutlass-dsl[cu13]>=4.4.2"']
    assert not any("build it from source" in r.summary for r in found.remedies)


def test_on_cuda_12_the_requirement_itself_is_installed(build: ModuleType,
                                                        matrix: Matrix) -> None:
    found = finding(fa4_facts(build, "12.8"), matrix)
    assert found.category == Category.NOT_INSTALLED
    assert found.remedies[0].commands == ['pip install "nvidia-cutlass-dsl>=4.4.2"']
    assert "pytest" not in found.message  # the [dev] extra was not asked for


def test_a_too_old_requirement_is_a_version_conflict(build: ModuleType, matrix: Matrix) -> None:
    old = build.dist("nvidia-cutlass-dsl", "4.1.0", SITE)
    found = finding(fa4_facts(build, "12.8", old), matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "nvidia-cutlass-dsl>=4.4.2, but 4.1.0 is installed" in found.message


def test_every_requirement_installed_names_the_provider(build: ModuleType,
                                                        matrix: Matrix) -> None:
    present = build.dist("nvidia-cutlass-dsl", "4.8.1", SITE).model_copy(
        update={"top_level": ["cutlass"]})
    found = finding(fa4_facts(build, "12.8", present), matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "every requirement flash-attn-4 4.0.0b36 declares is installed" in found.message
    assert "nvidia-cutlass-dsl 4.8.1 should provide it" in found.message
    assert found.remedies[0].commands == [
        'pip install --force-reinstall --no-deps nvidia-cutlass-dsl==4.8.1']


def test_unknown_requirements_keep_the_old_diagnosis(build: ModuleType, matrix: Matrix) -> None:
    facts = fa4_facts(build, "12.8")
    assert facts.packages.data is not None
    dists = [d.model_copy(update={"requires": None}) for d in facts.packages.data.distributions]
    older = facts.model_copy(update={"packages": build.packages(*dists)})
    assert finding(older, matrix).category == Category.VERSION_CONFLICT
    assert "not installed" in finding(older, matrix).message


@pytest.mark.parametrize("line", ['evil; os.system("x")', "bad name $(rm -rf ~)>=1",
                                  'a>=1; python_version > "3" and "', "x @ https://h/$(id).whl",
                                  'cutlass-dsl>=1 ; sys_platform == "win32"'])
def test_the_targets_requirement_text_never_reaches_a_shell_command(
        build: ModuleType, matrix: Matrix, line: str) -> None:
    found = finding(fa4_facts(build, "12.8", requires=[line]), matrix)
    commands = [c for r in found.remedies for c in r.commands]
    assert not any(ch in c for c in commands for ch in "$`;()")
    if line.startswith("x @"):  # a URL requirement: installed by name, the URL left out
        assert "pip install x" in commands


def test_markers_are_judged_for_the_target() -> None:
    lines = ['a; sys_platform == "win32"', 'b; python_version < "3.10"', 'c; extra == "cu13"', "d"]
    env = {"sys_platform": "linux", "python_version": "3.12"}
    assert [u.requirement.name for u in unmet_requirements(lines, [], env, set())] == ["d"]
    assert [u.requirement.name for u in unmet_requirements(lines, [], env, {"cu13"})] == ["c", "d"]


def test_no_module_triton_on_a_cpu_torch_is_blamed_on_torch(build: ModuleType,
                                                            matrix: Matrix) -> None:
    """flash-attn-4 on a CPU-only torch fails on triton, which only torch's CUDA builds bring:
    the cause is torch, not the missing cutlass or einops that the family also declares."""
    fa4 = build.dist("flash-attn-4", FA4, SITE).model_copy(update={"requires": REQUIRES})
    facts = build.facts(
        build.host("3.12.3"),
        packages=build.packages(build.dist("torch", "2.11.0+cpu", SITE), fa4),
        driver=build.driver("580.82.07", "13.0", [build.gpu("NVIDIA H200", "9.0")]),
        torch=build.torch("2.11.0+cpu", None, None, [], cxx11_abi=True, site=SITE),
        flash=[build.family(build.Family.FA4, FA4, build.import_failed(
            build.failed("No module named 'triton'", exception_type="ModuleNotFoundError")))])
    found = finding(facts, matrix)
    assert found.category == Category.TORCH_CPU_ONLY
    assert "triton comes with torch's CUDA builds" in found.message
    assert "einops" not in found.message and "cutlass" not in found.message
    assert any("torch==2.11.0+cu" in c for r in found.remedies for c in r.commands)


def test_a_missing_requirement_on_a_cpu_torch_names_the_cuda_torch_too(build: ModuleType,
                                                                        matrix: Matrix) -> None:
    """flash-attn-4 without nvidia-cutlass-dsl over a CPU-only torch: installing the requirement
    is the first step, and the finding says at once that the family then needs a CUDA torch (a
    CPU build ships no triton), instead of leaving it to be found on the next check."""
    fa4 = build.dist("flash-attn-4", FA4, SITE).model_copy(update={"requires": REQUIRES})
    facts = build.facts(
        build.host("3.12.3"),
        packages=build.packages(build.dist("torch", "2.11.0+cpu", SITE),
                                build.dist("einops", "0.8.1", SITE), fa4),
        driver=build.driver("580.82.07", "13.0", [build.gpu("NVIDIA H200", "9.0")]),
        torch=build.torch("2.11.0+cpu", None, None, [], cxx11_abi=True, site=SITE),
        flash=[build.family(build.Family.FA4, FA4, build.import_failed(
            build.failed(NO_CUTLASS, exception_type="ModuleNotFoundError")))])
    found = finding(facts, matrix)
    assert found.category == Category.NOT_INSTALLED
    assert found.remedies[0].commands == ['pip install "nvidia-cutlass-dsl>=4.4.2"']
    then = [r for r in found.remedies if r.summary.startswith("Then flash-attn-4")]
    assert then and any("torch==2.11.0+cu" in c for r in then for c in r.commands)


def test_a_missing_requirement_on_a_cuda_torch_asks_for_no_other_torch(build: ModuleType,
                                                                       matrix: Matrix) -> None:
    found = finding(fa4_facts(build, "12.8"), matrix)
    assert not any("CUDA build of torch" in r.summary for r in found.remedies)
