"""cuDNN frontend's fused-attention checks (NVIDIA/cudnn-frontend at every tag, recorded in
tests/fixtures/cudnn_excerpts.yaml): each is catalogued with its category, a refused head dim or
GPU names the other backends, and a check a newer cuDNN lifts names that cuDNN."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.version import Version

from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding
from fadoctor.triage.catalog_data import entries
from fadoctor.triage.cudnn_remedies import needed
from fadoctor.triage.diagnose import triage

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import cudnn_sources


def _said(finding: Finding) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)} {r.code or ''}" for r in finding.remedies)


def test_every_recorded_check_is_catalogued() -> None:
    printed = {e.printed for e in entries() if e.source == "cudnn"}
    recorded = {row[2] for rows in cudnn_sources.load().values() for row in rows}
    assert recorded and recorded <= printed


def test_a_refused_head_dim_names_the_other_backends(matrix: Matrix) -> None:
    # Transformer Engine prints the frontend's message after its own "cuDNN Error: "
    text = ("RuntimeError: fused_attn_f16_arbitrary_seqlen.cu:639 in function operator(): cuDNN "
            "Error: Num hidden_dim shoud be less than 128 and hidden_dim should be multiple of 8. "
            "For more information, enable cuDNN error logging\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.HEAD_DIM_UNSUPPORTED
    assert "NVTE_FUSED_ATTN=0" in _said(top) and "enable_cudnn_sdp(False)" in _said(top)


def test_a_check_a_newer_cudnn_lifts_names_it(matrix: Matrix) -> None:
    text = "cuDNN Error: For cuDNN version below 9.2.0, sliding window attention is not supported\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "nvidia-cudnn-cu12>=9.2.0" in top.remedies[0].commands[0]


@pytest.mark.parametrize("printed, version", [
    ("For cuDNN version below 9.5.0, paged caches are not supported", "9.5.0"),
    ("head_dim should be less than or equal to 128 for backend version 9.9 or below on ampere "
     "architecture", "9.10"),
    ("Causal bottom right masking requires cudnn 9.3.0 and above", "9.3.0"),
    ("SDPA OP requires cudnn version 8.9.3 and above", "8.9.3"),
    ("hidden_dim should be multiple of 8", None),
])
def test_the_cudnn_a_message_names(printed: str, version: str) -> None:
    assert needed(printed) == (Version(version) if version else None)
