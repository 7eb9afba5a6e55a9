"""The memory estimate's arithmetic (runs without transformers): parameters, persistent state,
the phases, and the largest batch that fits."""

from __future__ import annotations

import pytest
from tests.helpers.model_configs import config_file

from fadoctor.model.estimate import estimate, largest_batch, largest_seq
from fadoctor.model.memory import GIB, lora_params, params, state_terms
from fadoctor.model.spec import TrainingPlan, read_config, spec_from_config


def spec(name: str):  # type: ignore[no-untyped-def]
    return spec_from_config(read_config(config_file(name)), name)


def test_llama_3_1_8b_parameters_and_lora_rank_16() -> None:
    s = spec("llama-3.1-8b")
    assert params(s) == 8_030_261_248
    # peft's print_trainable_parameters for r=16 on every Linear of Llama-3-8B
    assert lora_params(s, TrainingPlan(method="lora", lora_r=16)) == 41_943_040
    assert lora_params(s, TrainingPlan(method="lora", lora_targets=("q_proj", "v_proj"))) == \
        16 * 32 * ((4096 + 4096) + (4096 + 1024))


@pytest.mark.parametrize("recipe, per_param", [("bf16", 8), ("mixed", 16)])
def test_full_fine_tuning_keeps_8_or_16_bytes_per_parameter(recipe: str, per_param: int) -> None:
    s = spec("mistral-7b-v0.1")
    terms = state_terms(s, TrainingPlan(method="full", recipe=recipe))  # type: ignore[arg-type]
    assert sum(t.bytes for t in terms) == per_param * params(s)


def test_qlora_weights_are_about_half_a_byte_per_linear_weight() -> None:
    s = spec("qwen2.5-7b")
    weights = state_terms(s, TrainingPlan(method="qlora"))[0].bytes
    assert 4.5 * GIB < weights < 9 * GIB  # 7.6B parameters: NF4 layers, fp32 embeddings


def test_checkpointing_and_flash_attention_save_memory() -> None:
    s = spec("llama-3.1-8b")
    base = TrainingPlan(method="lora", batch=4, seq=4096)
    plain = estimate(s, base).peak_allocated
    assert estimate(s, base.model_copy(update={"checkpointing": True})).peak_allocated < plain
    assert estimate(s, base.model_copy(update={"attn": "eager"})).peak_allocated > plain


def test_the_loss_logits_grow_with_the_vocabulary() -> None:
    s = spec("qwen2.5-0.5b")
    plan = TrainingPlan(method="full", batch=8, seq=4096, checkpointing=True)
    result = estimate(s, plan)
    assert result.peak_phase.startswith("backward (start)")
    loss = next(t for t in result.terms if t.name.startswith("loss gradients")).bytes
    assert loss == 8 * s.vocab_size * 8 * 4096  # two fp32 vocabulary-sized tensors per token


def test_largest_batch_and_sequence_fit_and_one_more_does_not() -> None:
    s = spec("llama-3.1-8b")
    plan = TrainingPlan(method="lora", seq=4096, checkpointing=True)
    capacity = 80 * GIB
    n = largest_batch(s, plan, capacity)
    assert n >= 1
    assert estimate(s, plan.model_copy(update={"batch": n}), capacity).fits
    assert not estimate(s, plan.model_copy(update={"batch": n + 1}), capacity).fits
    seq = largest_seq(s, plan, capacity)
    assert estimate(s, plan.model_copy(update={"seq": seq}), capacity).fits
    assert largest_batch(s, TrainingPlan(method="full"), 8 * GIB) == 0
