"""vLLM's attention-backend selector refusing a backend: the environment reason it lists is the
category (compute capability, head size, dtypes, a backend that does not import); reasons that
are the model's features alone name no environment cause."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

# written for this test, in the shape vllm/platforms/cuda.py raises (read at vllm 0.34.0)
SELECTED = ("ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this "
            "configuration. Reason: [{}]\n")


@pytest.mark.parametrize(("reason", "category"), [
    ("'compute capability not supported'", Category.GPU_UNSUPPORTED),
    ("'head_size not supported'", Category.HEAD_DIM_UNSUPPORTED),
    ("'kv_cache_dtype not supported'", Category.DTYPE_UNSUPPORTED),
])
def test_a_forced_backend_refused_for_an_environment_reason(matrix: Matrix, reason: str,
                                                            category: Category) -> None:
    top = triage("GPU: Tesla T4\n" + SELECTED.format(reason), matrix).diagnosis[0]
    assert top.category == category
    assert any("VLLM_ATTENTION_BACKEND" in c for r in top.remedies for c in r.commands)


def test_no_valid_backend_at_all(matrix: Matrix) -> None:
    text = ("ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
            "head_size=128, dtype=torch.bfloat16). Reasons: {FLASH_ATTN: [compute capability not "
            "supported], FLASHINFER: [compute capability not supported]}.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "no attention backend" in top.message


def test_a_model_feature_reason_is_no_environment_cause(matrix: Matrix) -> None:
    text = SELECTED.format("'attention sinks not supported'")
    assert all("vLLM refuses" not in d.message for d in triage(text, matrix).diagnosis)
