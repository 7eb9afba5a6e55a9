"""What FAD111 tells a user whose flash-attn does not import: the remedies for each cause."""

from __future__ import annotations

from types import ModuleType
from typing import List

import pytest
from packaging.version import Version

from fadoctor.checks import BY_KEY
from fadoctor.checks.remedies import build_from_source
from fadoctor.facts.model import Facts
from fadoctor.matrix import Matrix
from fadoctor.matrix.models import DriverVersion
from fadoctor.report import Category, Finding, Remedy

SITE = "/opt/venv/lib/python3.11/site-packages"
SET_DEVICE = f"{SITE}/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: " \
             "_ZN3c104cuda9SetDeviceEi"


def broken(build: ModuleType, error: str, torch_version: str = "2.6.0+cu124",
           cuda: str = "12.4", fa_version: str = "2.7.4.post1") -> Facts:
    a100 = build.gpu("NVIDIA A100-SXM4-80GB", "8.0")
    return build.facts(
        build.host(), packages=build.packages(build.dist("torch", torch_version, SITE)),
        driver=build.driver("570.172.08", "12.8", [a100]),
        torch=build.torch(torch_version, cuda, "8.0;9.0", [a100], cxx11_abi=False, site=SITE),
        flash=[build.family(build.Family.FA2, fa_version,
                            build.import_failed(build.failed(error)))])


def import_finding(facts: Facts, matrix: Matrix) -> Finding:
    outcome = BY_KEY["FAD111"].run(facts, matrix)
    assert isinstance(outcome, list)
    [finding] = outcome
    return finding


def forced_builds(remedies: List[Remedy]) -> List[int]:
    return [i for i, r in enumerate(remedies)
            if any(c.startswith("FLASH_ATTENTION_FORCE_BUILD=TRUE ") for c in r.commands)]


@pytest.mark.parametrize(("torch_version", "first"), [
    ("2.6.0+cu124", False),  # a release: reinstalling fetches the matching wheel; build if not
    ("2.6.0.dev20241112+cu124", True),  # a nightly: no release wheel was built against it
    ("2.6.0a0+ecf3bae40a.nv25.01", True),  # an NGC container's torch
])
def test_a_torch_mismatch_offers_a_build_from_source(build: ModuleType, matrix: Matrix,
                                                     torch_version: str, first: bool) -> None:
    finding = import_finding(broken(build, SET_DEVICE, torch_version), matrix)
    assert finding.category == Category.TORCH_VERSION_MISMATCH
    [at] = forced_builds(finding.remedies)
    assert (at == 0) is first
    assert finding.remedies[at].commands == [
        "FLASH_ATTENTION_FORCE_BUILD=TRUE pip install flash-attn==2.7.4.post1 "
        "--no-build-isolation --no-cache-dir"]


def test_a_missing_cuda_runtime_names_both_cudas(build: ModuleType, matrix: Matrix) -> None:
    error = "libcudart.so.11.0: cannot open shared object file: No such file or directory"
    finding = import_finding(broken(build, error, "2.1.2+cu121", "12.1", "2.3.3"), matrix)
    assert finding.category == Category.CUDA_RUNTIME_MISMATCH
    first = finding.remedies[0].summary
    assert "built for CUDA 11" in first and "libcudart.so.11.0" in first
    assert "runs CUDA 12.1" in first and "build for CUDA 12" in first


def test_an_old_glibc_offers_a_build_from_source(build: ModuleType, matrix: Matrix) -> None:
    error = "/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found"
    finding = import_finding(broken(build, error, fa_version="2.8.3"), matrix)
    assert finding.category == Category.GLIBC_TOO_OLD
    assert forced_builds(finding.remedies)


def test_build_from_source_says_so() -> None:
    remedy = build_from_source("2.8.3", "Because.")
    assert remedy.summary.startswith("Because. Build it from source")
    assert remedy.commands == ["FLASH_ATTENTION_FORCE_BUILD=TRUE pip install flash-attn==2.8.3 "
                               "--no-build-isolation --no-cache-dir"]


@pytest.mark.parametrize(("text", "spelled"), [
    ("530.30.02", "530.30.02"), ("450.80.02", "450.80.02"), ("570.26", "570.26"),
    ("580.65.06", "580.65.06"), ("525.60.13", "525.60.13"),
])
def test_driver_version_keeps_the_zero_padding(text: str, spelled: str) -> None:
    v = DriverVersion(text)
    assert str(v) == spelled
    assert v == Version(text) and v > Version("450.80.01")
