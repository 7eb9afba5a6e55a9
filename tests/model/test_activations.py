"""The activation terms against what autograd really saves: real transformers layers (random
weights, CPU, bf16), counted with torch's saved-tensor hooks, each storage once, parameters
excluded. Skipped where transformers or peft is not installed (fadoctor needs neither)."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.helpers.model_configs import config_file  # noqa: E402

from fadoctor.model import activations as act  # noqa: E402
from fadoctor.model.memory import params  # noqa: E402
from fadoctor.model.spec import TrainingPlan, read_config, spec_from_config  # noqa: E402

SMALL = dict(hidden_size=256, intermediate_size=704, num_attention_heads=8, num_key_value_heads=2,
             vocab_size=1024, bos_token_id=None, eos_token_id=None, pad_token_id=None)
BATCH, SEQ = 2, 128


def config(name: str, layers: int) -> Dict[str, Any]:
    cfg = read_config(config_file(name))
    cfg.update(SMALL, num_hidden_layers=layers)
    if "head_dim" in cfg:
        cfg["head_dim"] = 32
    return cfg


def build(cfg: Dict[str, Any], plan: TrainingPlan) -> Any:
    body = {k: v for k, v in cfg.items() if k not in ("architectures", "model_type")}
    hf = transformers.AutoConfig.for_model(cfg["model_type"], **body)
    hf.use_cache = False
    dtype = torch.float32 if plan.recipe == "mixed" else torch.bfloat16
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf, dtype=dtype,
                                                          attn_implementation=plan.attn)
    if plan.method == "lora":
        peft = pytest.importorskip("peft")
        lora = peft.LoraConfig(r=plan.lora_r, lora_alpha=2 * plan.lora_r, lora_dropout=0.0,
                               target_modules=list(plan.lora_targets), task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, lora)
    return model.train()


def saved(cfg: Dict[str, Any], plan: TrainingPlan) -> int:
    model = build(cfg, plan)
    params_at = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: Dict[int, int] = {}

    def pack(t: Any) -> Any:
        if t.untyped_storage().data_ptr() not in params_at:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    ids = torch.randint(0, SMALL["vocab_size"], (BATCH, SEQ))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), torch.autocast(
            "cpu", dtype=torch.bfloat16, enabled=plan.recipe == "mixed"):
        loss = model(input_ids=ids, labels=ids).loss
    assert loss.requires_grad
    return sum(seen.values())


def per_layer(name: str, plan: TrainingPlan) -> Tuple[float, float]:
    """(measured, estimated) bytes per token of one layer: the slope from 2 to 4 layers."""
    measured = (saved(config(name, 4), plan) - saved(config(name, 2), plan)) / 2
    spec = spec_from_config(config(name, 2), name)
    return measured / (BATCH * SEQ), act.total(act.layer(spec, plan))


CASES = [
    ("llama-3.1-8b", TrainingPlan(method="full")),
    ("llama-3.1-8b", TrainingPlan(method="full", attn="eager")),
    ("llama-3.1-8b", TrainingPlan(method="lora")),
    ("qwen2.5-0.5b", TrainingPlan(method="lora", lora_targets=("q_proj", "v_proj"))),
    ("phi-3-mini-4k-instruct", TrainingPlan(method="full")),
    ("phi-3-mini-4k-instruct", TrainingPlan(method="lora", lora_targets=("qkv_proj", "o_proj"))),
    ("gemma-2-9b", TrainingPlan(method="full", attn="eager")),
]


@pytest.mark.parametrize("name, plan", CASES, ids=[f"{n}-{p.method}-{p.attn}" for n, p in CASES])
def test_layer_terms_equal_the_saved_tensors(name: str, plan: TrainingPlan) -> None:
    plan = plan.model_copy(update={"batch": BATCH, "seq": SEQ})
    measured, estimated = per_layer(name, plan)
    assert estimated == pytest.approx(measured, rel=0.02)


def test_mixed_precision_adds_the_autocast_weight_copies() -> None:
    plan = TrainingPlan(method="full", recipe="mixed", batch=BATCH, seq=SEQ)
    measured, estimated = per_layer("llama-3.1-8b", plan)
    spec = spec_from_config(config("llama-3.1-8b", 2), "x")
    copies = 2 * (params(spec) - 2 * spec.vocab_size * spec.hidden_size
                  - (2 * spec.num_layers + 1) * spec.hidden_size) / spec.num_layers
    assert estimated + copies / (BATCH * SEQ) == pytest.approx(measured, rel=0.02)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.1", "gemma-2-9b",
                                  "phi-3-mini-4k-instruct", "qwen2.5-0.5b"])
def test_parameter_count_equals_the_transformers_model(name: str) -> None:
    cfg = read_config(config_file(name))
    body = {k: v for k, v in cfg.items() if k not in ("architectures", "model_type")}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(cfg["model_type"], **body))
    assert params(spec_from_config(cfg, name)) == sum(p.numel() for p in model.parameters())
