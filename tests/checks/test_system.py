"""The system checks' edge logic: architectures, driver floors, GPU visibility, duplicates."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Dict, List, Mapping, Optional, Sequence

import pytest
from packaging.version import Version

from fadoctor.checks import BY_KEY
from fadoctor.checks.base import Skip
from fadoctor.checks.system import runs_on
from fadoctor.facts.model import Facts, Gpu
from fadoctor.install.torch import torch_install
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Severity

SITE = "/opt/venv/lib/python3.11/site-packages"
CU12 = "5.0;6.0;7.0;7.5;8.0;8.6;9.0"


def machine(build: ModuleType, *, driver: Optional[str] = "550.54.15", driver_cuda: str = "12.4",
            torch_version: str = "2.6.0+cu124", cuda: Optional[str] = "12.4", archs: str = CU12,
            gpus: Optional[Sequence[Gpu]] = None, environment: Optional[Mapping[str, str]] = None,
            dists: Sequence[Any] = (), **torch_kw: Any) -> Facts:
    """An A100 box with torch 2.6 cu124 unless told otherwise; driver=None means no driver."""
    cards = list(gpus) if gpus is not None else [build.gpu("NVIDIA A100-SXM4-80GB", "8.0")]
    return build.facts(
        build.host(environment=environment),
        packages=build.packages(*(dists or [build.dist("torch", torch_version, SITE)])),
        driver=build.driver(driver, driver_cuda, cards) if driver else build.no_driver(),
        torch=build.torch(torch_version, cuda, archs, cards, site=SITE, **torch_kw))


def run(check_id: str, facts: Facts, matrix: Matrix) -> List[Finding]:
    outcome = BY_KEY[check_id].run(facts, matrix)
    assert not isinstance(outcome, Skip), outcome.reason
    return outcome


def problems(check_id: str, facts: Facts, matrix: Matrix) -> List[Finding]:
    return [f for f in run(check_id, facts, matrix) if f.severity != Severity.INFO]


def commands(findings: Sequence[Finding]) -> List[str]:
    return [c for f in findings for r in f.remedies for c in r.commands]


# -- FAD106: which arch-list entries run on which GPU ---------------------------------------------

@pytest.mark.parametrize(("arch", "cc", "runs"), [
    ("sm_90", "9.0", True),  # SASS on its own arch
    ("sm_80", "8.6", True),  # SASS runs on a newer minor of the same major
    ("sm_80", "8.9", True),
    ("sm_86", "8.0", False),  # ... never on an older minor
    ("sm_90", "10.0", False),  # ... nor on another major
    ("sm_120", "12.1", True),
    ("sm_100", "12.0", False),
    ("compute_90", "12.0", True),  # PTX is JIT-compiled for equal or newer GPUs
    ("compute_90", "9.0", True),
    ("compute_90", "8.9", False),
    ("compute_120", "10.0", False),
    ("sm_90a", "9.0", True),  # arch-specific cubins: that arch only
    ("sm_90a", "10.0", False),
    ("sm_100a", "10.3", False),
    ("sm_100f", "10.3", True),  # family-specific: the same major, equal or newer minor
    ("sm_100f", "12.0", False),
    ("gfx90a", "9.0", False),  # not a CUDA arch
    ("sm_", "9.0", False),
])
def testruns_on(arch: str, cc: str, runs: bool) -> None:
    assert runs_on(arch, Version(cc)) is runs


def test_torch_without_kernels_for_the_gpu(build: ModuleType, matrix: Matrix) -> None:
    rtx5090 = build.gpu("NVIDIA GeForce RTX 5090", "12.0")
    facts = machine(build, torch_version="2.7.1+cu126", cuda="12.6", gpus=[rtx5090])
    [finding] = problems("FAD106", facts, matrix)
    assert finding.category == Category.NO_KERNEL_IMAGE
    assert finding.evidence["compute_capability"] == "12.0"
    # torch 2.7's cu128 build is the one with sm_120 (torch_cuda_facts.md §1.3)
    assert commands([finding]) == [torch_install("2.7.1", "cu128")]


def test_ptx_in_the_arch_list_covers_newer_gpus(build: ModuleType, matrix: Matrix) -> None:
    gb10 = build.gpu("NVIDIA GB10", "12.1")
    facts = machine(build, torch_version="2.9.1+cu130", cuda="13.0", driver="580.95.05",
                    driver_cuda="13.0", archs="7.5;8.0;8.6;9.0;10.0;12.0+PTX", gpus=[gb10])
    assert problems("FAD106", facts, matrix) == []


def test_a_release_without_any_fitting_build(build: ModuleType, matrix: Matrix) -> None:
    b200 = build.gpu("NVIDIA B200", "10.0")
    facts = machine(build, torch_version="2.5.1+cu124", gpus=[b200])
    [finding] = problems("FAD106", facts, matrix)
    assert finding.remedies and not commands([finding])
    assert "No CUDA build of torch 2.5" in finding.remedies[0].summary


def test_each_capability_is_reported_once(build: ModuleType, matrix: Matrix) -> None:
    cards = [build.gpu("NVIDIA GeForce RTX 5090", "12.0", index=i) for i in range(2)]
    cards.append(build.gpu("NVIDIA A100-SXM4-80GB", "8.0", index=2))
    facts = machine(build, torch_version="2.6.0+cu124", gpus=cards)
    [finding] = problems("FAD106", facts, matrix)
    assert finding.subject == "NVIDIA GeForce RTX 5090"


# -- FAD104: driver floor (error) vs the toolkit's own driver (warning) ----------------------------

@pytest.mark.parametrize(("driver", "cuda", "severity"), [
    ("470.199.02", "12.1", Severity.ERROR),  # below 12.x's floor (525.60.13): cannot start
    ("525.60.12", "12.1", Severity.ERROR),
    ("525.60.13", "12.1", Severity.WARNING),  # the floor itself: minor-version compatibility
    ("530.30.01", "12.1", Severity.WARNING),
    ("530.30.02", "12.1", None),  # the 12.1 toolkit's own driver
    ("575.57.08", "13.0", Severity.ERROR),  # 13.x needs 580
    ("580.65.06", "13.0", None),
    ("580.65.06", "13.2", Severity.WARNING),  # 13.2's own driver is 595.45.04
    ("342.01", "10.0", Severity.ERROR),  # below 10.x's first driver (410.48)
    ("418.39", "10.2", Severity.ERROR),  # no minor-version compatibility before 11: 10.2 needs 440.33
    ("440.33", "10.2", None),
])
def test_driver_against_torch_cuda(build: ModuleType, matrix: Matrix, driver: str, cuda: str,
                                   severity: Optional[Severity]) -> None:
    variant = "cu" + cuda.replace(".", "")
    facts = machine(build, driver=driver, driver_cuda=cuda, torch_version=f"2.9.1+{variant}",
                    cuda=cuda)
    found = problems("FAD104", facts, matrix)
    assert [f.severity for f in found] == ([severity] if severity else [])
    assert all(f.category == Category.DRIVER_TOO_OLD for f in found)


def test_a_driver_too_old_names_the_drivers_it_needs(build: ModuleType, matrix: Matrix) -> None:
    facts = machine(build, driver="470.199.02", driver_cuda="11.4", torch_version="2.1.2+cu121",
                    cuda="12.1")
    [finding] = problems("FAD104", facts, matrix)
    assert finding.evidence["min_driver"] == "525.60.13"
    text = " ".join(r.summary for r in finding.remedies)
    assert ">= 530.30.02" in text  # NVIDIA's spelling, zero-padded as the release notes print it


def test_a_warning_names_the_toolkit_driver(build: ModuleType, matrix: Matrix) -> None:
    facts = machine(build, driver="560.35.03", driver_cuda="12.6", torch_version="2.8.0+cu128",
                    cuda="12.8")
    [finding] = problems("FAD104", facts, matrix)
    assert finding.severity == Severity.WARNING
    assert finding.evidence["toolkit_driver"] == "570.26"


@pytest.mark.parametrize(("kw", "why"), [
    ({"driver": None}, "driver"),
    ({"driver": "N/A"}, "readable driver version"),
    ({"cuda": None, "torch_version": "2.6.0+cpu"}, "CUDA build"),
])
def test_driver_cuda_skips_when_unknown(build: ModuleType, matrix: Matrix, kw: Dict[str, Any],
                                        why: str) -> None:
    outcome = BY_KEY["FAD104"].run(machine(build, **kw), matrix)
    assert isinstance(outcome, Skip) and why in outcome.reason


def test_a_cuda_major_the_matrix_does_not_know(build: ModuleType, matrix: Matrix) -> None:
    facts = machine(build, torch_version="3.0.0+cu140", cuda="14.0")
    [finding] = problems("FAD104", facts, matrix)
    assert (finding.severity, finding.category) == (Severity.WARNING, Category.INTERNAL)


# -- FAD105: torch sees the GPUs the driver reports -----------------------------------------------

@pytest.mark.parametrize("value", ["", "-1", "NoDevFiles"])
def test_cuda_visible_devices_hiding_every_gpu(build: ModuleType, matrix: Matrix,
                                              value: str) -> None:
    facts = machine(build, environment={"CUDA_VISIBLE_DEVICES": value}, cuda_available=False,
                    cuda_error="RuntimeError: No CUDA GPUs are available")
    [finding] = problems("FAD105", facts, matrix)
    assert finding.category == Category.NO_GPU
    assert f"CUDA_VISIBLE_DEVICES={value!r}" in finding.message
    assert commands([finding]) == ["unset CUDA_VISIBLE_DEVICES"]


def test_a_visible_device_list_is_not_blamed(build: ModuleType, matrix: Matrix) -> None:
    error = "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment"
    facts = machine(build, environment={"CUDA_VISIBLE_DEVICES": "0"}, cuda_available=False,
                    cuda_error=error)
    [finding] = problems("FAD105", facts, matrix)
    assert finding.category == Category.NO_GPU
    assert error in finding.message and not commands([finding])


def test_torch_blaming_the_driver(build: ModuleType, matrix: Matrix) -> None:
    facts = machine(build, driver="470.199.02", driver_cuda="11.4", torch_version="2.1.2+cu121",
                    cuda="12.1", cuda_available=False,
                    cuda_error="RuntimeError: The NVIDIA driver on your system is too old "
                               "(found version 11040).")
    [finding] = problems("FAD105", facts, matrix)
    assert finding.category == Category.DRIVER_TOO_OLD


def test_torch_sees_the_gpus(build: ModuleType, matrix: Matrix) -> None:
    assert problems("FAD105", machine(build), matrix) == []


# -- FAD107: duplicate installs -------------------------------------------------------------------

def test_duplicate_installs(build: ModuleType, matrix: Matrix) -> None:
    user = "/root/.local/lib/python3.11/site-packages"
    dists = [build.dist("torch", "2.6.0+cu124", SITE), build.dist("torch", "2.1.2+cu121", user),
             build.dist("flash-attn", "2.7.4.post1", SITE)]
    [finding] = problems("FAD107", machine(build, dists=dists), matrix)
    assert (finding.severity, finding.category, finding.subject) == (
        Severity.WARNING, Category.VERSION_CONFLICT, "torch")
    assert finding.evidence["installs"] == [f"2.6.0+cu124 in {SITE}", f"2.1.2+cu121 in {user}"]
    # pip uninstall removes the copy first on sys.path (the one in use): both go, and the one in
    # use comes back alone; nothing prompts.
    assert commands([finding]) == ["pip uninstall -y torch", "pip uninstall -y torch",
                                   "pip install --no-deps torch==2.6.0+cu124"]


def test_single_installs_pass(build: ModuleType, matrix: Matrix) -> None:
    dists = [build.dist("torch", "2.6.0+cu124", SITE), build.dist("flash-attn", "2.7.4", SITE)]
    assert problems("FAD107", machine(build, dists=dists), matrix) == []


def test_duplicates_skip_without_the_package_list(build: ModuleType, matrix: Matrix) -> None:
    facts = machine(build).model_copy(update={"packages": build.Probe.failed(
        build.failed("the worker's packages record is malformed", kind="error"))})
    outcome = BY_KEY["FAD107"].run(facts, matrix)
    assert isinstance(outcome, Skip) and "malformed" in outcome.reason


# -- FAD101 / FAD103: no driver, CPU-only torch ---------------------------------------------------

def test_no_driver(build: ModuleType, matrix: Matrix) -> None:
    [finding] = problems("FAD101", machine(build, driver=None), matrix)
    assert finding.category == Category.NO_GPU and finding.evidence["detail"]


def test_a_cpu_torch_is_told_which_cuda_build_fits_the_driver(build: ModuleType,
                                                             matrix: Matrix) -> None:
    facts = machine(build, driver="580.95.05", driver_cuda="13.0", torch_version="2.13.0+cpu",
                    cuda=None)
    [finding] = problems("FAD103", facts, matrix)
    assert finding.category == Category.TORCH_CPU_ONLY
    assert commands([finding]) == [torch_install("2.13.0", "cu130")]


# -- FAD109: torch's own requirements ------------------------------------------------------------

def test_a_triton_outside_torchs_range_is_found_as_pip_check_would(build: ModuleType,
                                                                   matrix: Matrix) -> None:
    torch = build.dist("torch", "2.6.0+cu124", SITE).model_copy(update={"requires": [
        'triton==3.2.0; platform_system == "Linux" and platform_machine == "x86_64"',
        "filelock", "sympy==1.13.1"]})
    dists = [torch, build.dist("triton", "3.3.1", SITE)]
    [finding] = problems("FAD109", machine(build, dists=dists), matrix)
    assert (finding.category, finding.subject) == (Category.VERSION_CONFLICT, "triton")
    assert "requires triton==3.2.0" in finding.message and "3.3.1" in finding.message
    # torch never moves: --no-deps; filelock and sympy are not in the list, so not judged.
    assert commands([finding]) == ["pip install --no-deps triton==3.2.0"]
    fine = [torch, build.dist("triton", "3.2.0", SITE)]
    assert problems("FAD109", machine(build, dists=fine), matrix) == []
