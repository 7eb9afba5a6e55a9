"""Attention needs against the matrix: features by release, head-dim limits, recommendations."""

from __future__ import annotations

from typing import Dict

from tests.helpers.model_configs import config_file

from fadoctor.matrix import load_matrix
from fadoctor.model.advice import advise
from fadoctor.model.spec import TrainingPlan, read_config, spec_from_config
from fadoctor.model.support import Here, assess

MATRIX = load_matrix()


def spec(name: str, **changes: object):  # type: ignore[no-untyped-def]
    cfg = read_config(config_file(name))
    cfg.update(changes)
    return spec_from_config(cfg, name)


def rows(name: str, here: Here, **changes: object) -> Dict[str, object]:
    return {r.implementation: r for r in assess(spec(name, **changes), MATRIX, here)}


def test_softcapping_needs_flash_attn_2_6() -> None:
    old = rows("gemma-2-9b", Here(families={"fa2": "2.5.9.post1"}, ccs=("9.0",)))["fa2"]
    assert old.ok is False and any("softcap" in p for p in old.problems)  # type: ignore[attr-defined]
    new = rows("gemma-2-9b", Here(families={"fa2": "2.6.0"}, ccs=("9.0",)))["fa2"]
    assert new.ok is True and new.minimum == "2.6.0"  # type: ignore[attr-defined]


def test_head_dim_256_backward_on_a_3090_needs_2_5_5() -> None:
    here_old = Here(families={"fa2": "2.5.4"}, ccs=("8.6",))
    old = rows("gemma-2-9b", here_old, attn_logit_softcapping=None)["fa2"]
    assert old.head_dim_problem  # type: ignore[attr-defined]
    new = rows("gemma-2-9b", Here(families={"fa2": "2.5.5"}, ccs=("8.6",)),
               attn_logit_softcapping=None)["fa2"]
    assert not new.head_dim_problem  # type: ignore[attr-defined]
    a100 = rows("gemma-2-9b", Here(families={"fa2": "2.5.4"}, ccs=("8.0",)),
                attn_logit_softcapping=None)["fa2"]
    assert not a100.head_dim_problem  # type: ignore[attr-defined]


def test_sliding_window_needs_2_3_and_cudnn_caps_head_dim() -> None:
    assert rows("mistral-7b-v0.1", Here(families={"fa2": "2.2.5"}))["fa2"].ok is False  # type: ignore[attr-defined]
    assert rows("mistral-7b-v0.1", Here(families={"fa2": "2.3.0"}))["fa2"].ok is True  # type: ignore[attr-defined]
    cudnn = rows("gemma-2-9b", Here(torch="2.11.0"))["sdpa_cudnn"]
    assert cudnn.head_dim_problem  # type: ignore[attr-defined]


def test_bf16_on_a_t4_is_a_dtype_problem() -> None:
    row = rows("llama-3.1-8b", Here(torch="2.11.0", ccs=("7.5",)))["sdpa_efficient"]
    assert row.dtype_problem and row.ok is False  # type: ignore[attr-defined]


def test_recommendations() -> None:
    h100 = Here(torch="2.11.0+cu130", ccs=("9.0",))
    gemma = advise(spec("gemma-2-9b"), TrainingPlan(), MATRIX, h100)
    assert gemma.recommendation.attn_implementation == "flash_attention_2"
    # No open range (issue 18): `fix` plans the exact wheel or build; the floor is prose.
    assert gemma.recommendation.commands == ["fadoctor fix --print-pins --family fa2"]
    assert "flash-attn 2.6.0 or newer" in gemma.recommendation.why
    assert not any(">=" in c for c in gemma.recommendation.commands)
    assert gemma.dtype_note and "float32" in gemma.dtype_note
    llama = advise(spec("llama-3.1-8b"), TrainingPlan(), MATRIX, h100)
    assert llama.recommendation.attn_implementation == "sdpa"
    with_fa = advise(spec("llama-3.1-8b"), TrainingPlan(), MATRIX,
                     Here(families={"fa2": "2.8.3"}, torch="2.8.0", ccs=("9.0",)))
    assert with_fa.recommendation.attn_implementation == "flash_attention_2"
