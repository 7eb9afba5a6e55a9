"""'device kernel image is invalid' (cudaErrorInvalidKernelImage) is an image the driver cannot
load, not a missing arch: with a flash-attn release the matrix knows to need a newer driver
(fatbin-compression-needs-driver-550), that driver floor is the cause."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

ERROR = "RuntimeError: CUDA error: device kernel image is invalid\n"


def test_the_release_with_compressed_kernels_on_an_old_driver(matrix: Matrix) -> None:
    text = "flash-attn 2.8.1\nDriver Version: 535.183.01\n" + ERROR
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.DRIVER_TOO_OLD
    assert "550.54.14" in top.message and "535.183.01" in top.message
    assert any("flash-attn==2.8.2" in c for rem in top.remedies for c in rem.commands)


def test_a_new_enough_driver_rules_the_defect_out(matrix: Matrix) -> None:
    text = "flash-attn 2.8.1\nDriver Version: 570.86.10\n" + ERROR
    assert all(d.category != Category.DRIVER_TOO_OLD for d in triage(text, matrix).diagnosis)


def test_a_release_without_the_defect_is_not_blamed_on_the_driver(matrix: Matrix) -> None:
    text = "flash-attn 2.7.4.post1\n" + ERROR
    assert all(d.category != Category.DRIVER_TOO_OLD for d in triage(text, matrix).diagnosis)
