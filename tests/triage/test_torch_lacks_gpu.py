"""A stated torch build and a named GPU whose arch the build's wheels lack (the matrix's arch
lists): no kernel image, with the nearest build that has it, even where no message says so."""

from __future__ import annotations

from packaging.version import Version
from tests.helpers.triage_said import said, top

from fadoctor.archs import arch_name, arch_runs_on
from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def _runs(archs: str, cc: Version) -> bool:
    return any(arch_runs_on(arch_name(a), (cc.major, cc.minor)) for a in archs.split(";"))


def test_pascal_under_a_cuda_129_torch(matrix: Matrix) -> None:
    release = matrix.torch_release(Version("2.8.0"))
    assert release is not None and not _runs(release.arch_lists["cu129"], Version("6.1"))
    fitting = [v for v, archs in release.arch_lists.items() if _runs(archs, Version("6.1"))]
    found = top("Setup: GTX 1070, 16 GB RAM.\nVersions: PyTorch 2.8.0 + cu129\n"
                "At startup I noticed warnings about an incompatibility.\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "sm_61" in found.message
    assert any(f"torch==2.8.0+{v}" in said(found) for v in fitting)


def test_a_release_without_its_variant_counts_when_no_variant_has_the_gpu(matrix: Matrix) -> None:
    release = matrix.torch_release(Version("2.5.1"))
    assert release is not None and not any(_runs(a, Version("12.0"))
                                           for a in release.arch_lists.values())
    found = top("RTX 5090, torch 2.5.1: every CUDA call fails\n", matrix)
    assert found.category == Category.NO_KERNEL_IMAGE and "cu128" in said(found)


def test_a_build_that_has_the_gpu_is_not_blamed(matrix: Matrix) -> None:
    result = triage("GTX 1070, torch 2.8.0+cu126: the kernel fails with an error\n", matrix)
    assert all("has no kernels for" not in d.message for d in result.diagnosis)


def test_arm_hosts_carry_other_arch_lists(matrix: Matrix) -> None:
    # the matrix's lists are the x86_64 wheels'; Jetson Thor's aarch64 cu130 builds have sm_110
    result = triage("Jetson Thor\ntorch 2.10.0+cu130\nflash-attn fails with a kernel error\n",
                    matrix)
    assert all("has no kernels for" not in d.message for d in result.diagnosis)
