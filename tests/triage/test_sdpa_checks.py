"""PyTorch SDPA's own flash and memory-efficient backend checks (catalogued from libtorch's C
strings at each release): the GPU or head dim it refuses is the cause, and the fix lets SDPA use
another backend, or a torch whose range holds the GPU."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.catalog_data import entries
from fadoctor.triage.diagnose import triage

SDPA = [e for e in entries() if e.source == "sdpa"]


def test_the_sdpa_checks_are_catalogued_with_their_releases() -> None:
    ranges = [e for e in SDPA if "Attempting to run on a sm" in e.printed]
    assert ranges and all(e.category == Category.GPU_UNSUPPORTED for e in ranges)
    assert any("[sm80, sm90]" in e.printed for e in ranges)


def test_a_turing_gpu_refused_by_sdpas_flash_backend(matrix: Matrix) -> None:
    text = ("UserWarning: Flash attention kernel not used because: (Triggered internally at "
            "sdp_utils.cpp)\nUserWarning: Flash attention only supports gpu architectures in the "
            "range [sm80, sm90]. Attempting to run on a sm 7.5 gpu.\n"
            "RuntimeError: No available kernel. Aborting execution.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "SDPBackend.MATH" in (top.remedies[0].code or "")


def test_a_gpu_beyond_the_range_of_this_torch_gets_a_newer_torch(matrix: Matrix) -> None:
    text = ("torch 2.6.0+cu124\nFlash attention only supports gpu architectures in the range "
            "[sm80, sm90]. Attempting to run on a sm 12.0 gpu.\n")
    top = triage(text, matrix).diagnosis[0]
    assert any(c.startswith("python -m pip install torch==") for r in top.remedies
               for c in r.commands)
