"""The last resort: a report that names a Blackwell GPU and a failure, and no message that any
mechanism reads, gets the likeliest cause on such GPUs (a binary with no sm_1xx code), marked a
guess; it never speaks over a real finding, nor for older GPUs or reports with no failure."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category, Severity
from fadoctor.triage.diagnose import triage


@pytest.mark.parametrize("gpu, sm", [("RTX 5090 D", "sm_120"), ("RTX 5060", "sm_120"),
                                     ("B200", "sm_100")])
def test_a_blackwell_gpu_and_a_failure_is_a_missing_arch_guess(gpu: str, sm: str,
                                                               matrix: Matrix) -> None:
    text = (f"Add support for the {gpu}\n\nUsing the library with an {gpu} results in "
            "compatibility errors.\n")
    found = triage(text, matrix).diagnosis
    assert len(found) == 1
    top = found[0]
    assert top.category == Category.NO_KERNEL_IMAGE and top.severity == Severity.WARNING
    assert sm in top.message and "no message names the cause" in top.message
    said = " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)
    assert sm in said and ("cu12" in said or "cu13" in said)  # a torch with this GPU's code
    assert "sdpa" not in said.lower()  # no attention named: switching it changes nothing


def test_a_blackwell_guess_in_a_flash_attn_report_offers_sdpa_too(matrix: Matrix) -> None:
    text = ("flash-attn on the RTX 5090\n\nUsing flash-attn with an RTX 5090 results in "
            "compatibility errors.\n")
    top = triage(text, matrix).diagnosis[0]
    said = " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)
    assert top.category == Category.NO_KERNEL_IMAGE and "sdpa" in said.lower()


def test_the_package_named_is_the_one_to_rebuild(matrix: Matrix) -> None:
    text = ("mamba_ssm fails on my RTX 5090\n\n  File \"/x/site-packages/mamba_ssm/ops/"
            "selective_scan_interface.py\", line 5, in <module>\nsomething went wrong\n")
    said = " ".join(r.summary for r in triage(text, matrix).diagnosis[0].remedies)
    assert "mamba-ssm built with sm_120 code" in said and 'TORCH_CUDA_ARCH_LIST="12.0"' in said


def test_flash_attn_named_gets_its_source_build(matrix: Matrix) -> None:
    text = "flash-attn fails on RTX 5080\nit crashed\n"
    commands = [c for r in triage(text, matrix).diagnosis[0].remedies for c in r.commands]
    assert any("FLASH_ATTENTION_FORCE_BUILD=TRUE" in c for c in commands)


@pytest.mark.parametrize("text", [
    # an older GPU: nothing to guess from
    "Using the library with an RTX 4090 results in compatibility errors.\n",
    # no failure said
    "I have an RTX 5090 and would like to know the fastest attention.\n",
])
def test_no_guess_without_a_blackwell_gpu_and_a_failure(text: str, matrix: Matrix) -> None:
    assert not [d for d in triage(text, matrix).diagnosis if "no message names" in d.message]


def test_a_real_finding_silences_the_guess(matrix: Matrix) -> None:
    text = ("RTX 5090, it fails:\nImportError: libcudart.so.11.0: cannot open shared object "
            "file: No such file or directory\n")
    found = triage(text, matrix).diagnosis
    assert found and not [d for d in found if "no message names" in d.message]
    assert found[0].category == Category.CUDA_RUNTIME_MISMATCH
