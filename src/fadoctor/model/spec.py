"""A model as fadoctor reasons about it (read from a Hugging Face config.json) and a training plan.

`read_config` is the only I/O here (the CLI and collect call it); `spec_from_config` is pure: a
config dict becomes a frozen `ModelSpec`, or a `ConfigError` naming the field at fault.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List, Literal, Mapping, Optional, Tuple

from pydantic import BaseModel, ConfigDict, Field

from fadoctor.errors import InputError
from fadoctor.safety.inert import one_line

CONFIG_LIMIT = 16 << 20  # a config.json is a few kB
# The largest sizes taken as a model's: far above any model there is, far below an overflow.
MAX_SIZE = 1 << 40
CONFIGS = Path(__file__).resolve().parent / "configs"
ALL_LINEAR: Tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                               "down_proj")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ConfigError(InputError):
    """A config.json that fadoctor cannot read as a decoder model."""


class Structure(Frozen):
    """How a family's decoder layer is built in transformers: what its memory terms depend on."""

    norm: Literal["llama", "gemma"] = "llama"  # gemma: x.float() * (1 + w), all in fp32
    norms_per_layer: int = 2  # Gemma 2 adds post-attention and post-feed-forward norms
    fused_qkv: bool = False  # Phi-3: one qkv_proj, one gate_up_proj
    qkv_bias: bool = False
    activation: str = "silu"
    tied_default: bool = False  # tie_word_embeddings when the config does not say
    sdpa_supported: bool = True  # transformers' _supports_sdpa for the family
    known: bool = True  # False: an unknown model_type, estimated as a Llama-like decoder


# transformers' model classes (modeling_<type>.py): Gemma2 sets _supports_sdpa = False ("sdpa does
# not support softcapping") and ties embeddings by default; Qwen2 always has q/k/v biases.
STRUCTURES: Dict[str, Structure] = {
    "llama": Structure(),
    "mistral": Structure(),
    "qwen2": Structure(qkv_bias=True),
    "phi3": Structure(fused_qkv=True),
    "gemma2": Structure(norm="gemma", norms_per_layer=4, activation="gelu_pytorch_tanh",
                        tied_default=True, sdpa_supported=False),
}


class ModelSpec(Frozen):
    """The attention features and sizes of one decoder-only model."""

    name: str
    model_type: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_embeddings: bool
    max_positions: Optional[int] = None
    dtype: Optional[str] = None  # as the config says: bfloat16, float16, float32
    sliding_window: Optional[int] = None
    sliding_layers: int = 0  # how many layers use the window
    attn_softcap: Optional[float] = None
    final_softcap: Optional[float] = None
    alibi: bool = False
    rope_scaling: Optional[str] = None  # "llama3 x8.0", "yarn x4.0"
    mlp_bias: bool = False
    structure: Structure = Structure()

    @property
    def gqa(self) -> bool:
        return self.num_kv_heads < self.num_heads


Method = Literal["full", "lora", "qlora"]
Recipe = Literal["bf16", "mixed"]
AttnImpl = Literal["flash_attention_2", "sdpa", "eager"]


class TrainingPlan(Frozen):
    """What the estimate is for. `recipe` (full fine-tuning): bf16 keeps weights, gradients and
    AdamW states in bf16 (transformers Trainer with a bf16 model); mixed keeps fp32 weights
    (the master copy), fp32 gradients and states, and runs forward/backward under bf16
    autocast (Trainer with an fp32 model and bf16=True)."""

    method: Method = "lora"
    recipe: Recipe = "bf16"
    batch: int = Field(1, ge=1, le=1 << 20)
    seq: int = Field(2048, ge=1, le=1 << 30)
    checkpointing: bool = False
    attn: AttnImpl = "sdpa"
    lora_r: int = Field(16, ge=1, le=1 << 16)
    lora_targets: Tuple[str, ...] = ALL_LINEAR


class ModelFacts(Frozen):
    """A model and a plan, as `check --model` hands them to the model checks."""

    spec: ModelSpec
    plan: TrainingPlan
    source: str  # the config file it was read from


def read_config(path: Path) -> Dict[str, Any]:
    """The config.json at `path` (a file, or a model folder holding one). Never downloads; only
    a regular file of at most CONFIG_LIMIT bytes is read."""
    from fadoctor.safety.textfile import read_text, shown

    file = path / "config.json" if path.is_dir() else path
    text = read_text(file, "model config", CONFIG_LIMIT)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"model config {shown(file)} is not JSON: {one_line(str(exc))}"
                          ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"model config {shown(file)} is not a JSON object")
    return data


def shipped() -> List[str]:
    """The names of the configs shipped with fadoctor (`fadoctor model NAME` reads them)."""
    return sorted(p.stem for p in CONFIGS.glob("*.json"))


def spec_from_config(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    text = cfg.get("text_config")
    if isinstance(text, dict):  # multimodal wrappers keep the decoder's config inside
        cfg = {**text, "model_type": text.get("model_type", cfg.get("model_type"))}
    model_type = cfg.get("model_type")
    if not model_type or not isinstance(model_type, str):
        raise ConfigError(f"{one_line(name)}: no model_type (a string): is this a transformers "
                          "config.json?")
    structure = STRUCTURES.get(model_type, Structure(known=False))
    heads = _int(cfg, "num_attention_heads", name)
    hidden = _int(cfg, "hidden_size", name)
    layers = _int(cfg, "num_hidden_layers", name)
    kv_heads = _int(cfg, "num_key_value_heads", name, heads)
    if kv_heads > heads or heads % kv_heads:
        raise ConfigError(f"{one_line(name)}: num_key_value_heads {kv_heads} must divide "
                          f"num_attention_heads {heads}")
    window, sliding = _sliding(cfg, model_type, layers, name)
    return ModelSpec(
        name=name, model_type=model_type, hidden_size=hidden, num_layers=layers,
        num_heads=heads, num_kv_heads=kv_heads,
        head_dim=_int(cfg, "head_dim", name, hidden // heads),
        intermediate_size=_int(cfg, "intermediate_size", name),
        vocab_size=_int(cfg, "vocab_size", name),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", structure.tied_default)),
        max_positions=_optional_int(cfg, "max_position_embeddings", name),
        dtype=_optional_str(cfg, "torch_dtype", name) or _optional_str(cfg, "dtype", name),
        sliding_window=window, sliding_layers=sliding,
        attn_softcap=_optional_number(cfg, "attn_logit_softcapping", name),
        final_softcap=_optional_number(cfg, "final_logit_softcapping", name),
        alibi=bool(cfg.get("alibi")) or model_type in ("bloom", "mpt"),
        rope_scaling=_rope(cfg, name), mlp_bias=bool(cfg.get("mlp_bias")),
        structure=structure.model_copy(
            update={"qkv_bias": structure.qkv_bias or bool(cfg.get("attention_bias"))}))


def _int(cfg: Mapping[str, Any], key: str, name: str, default: Optional[int] = None) -> int:
    value = cfg.get(key)
    if value is None and default is not None:
        value = default  # checked too: hidden_size // heads can be 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_SIZE:
        raise ConfigError(f"{one_line(name)}: {key} must be a positive integer (at most "
                          f"{MAX_SIZE}), got {one_line(repr(value))[:80]}")
    return value


def _optional_int(cfg: Mapping[str, Any], key: str, name: str) -> Optional[int]:
    return None if cfg.get(key) is None else _int(cfg, key, name)


def _optional_number(cfg: Mapping[str, Any], key: str, name: str) -> Optional[float]:
    value = cfg.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value) or value < 0:
        raise ConfigError(f"{one_line(name)}: {key} must be a number >= 0, got "
                          f"{one_line(repr(value))[:80]}")
    return float(value)


def _optional_str(cfg: Mapping[str, Any], key: str, name: str) -> Optional[str]:
    value = cfg.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{one_line(name)}: {key} must be a string, got "
                          f"{one_line(repr(value))[:80]}")
    return value


def _sliding(cfg: Mapping[str, Any], model_type: str, layers: int, name: str
             ) -> Tuple[Optional[int], int]:
    """The window and how many layers use it, as transformers builds the layers."""
    window = cfg.get("sliding_window")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)):
        raise ConfigError(f"{one_line(name)}: sliding_window must be an integer or null, got "
                          f"{one_line(repr(window))[:80]}")
    if window is None or window <= 0:
        return None, 0
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list):
        return window, sum(1 for k in kinds if k == "sliding_attention")
    if model_type == "qwen2":  # only with use_sliding_window, from layer max_window_layers on
        if not cfg.get("use_sliding_window"):
            return None, 0
        first = cfg.get("max_window_layers") or 0
        return window, max(0, layers - (first if isinstance(first, int) else 0))
    if model_type == "gemma2":  # every other layer, starting with the first
        return window, (layers + 1) // 2
    return window, layers


def _rope(cfg: Mapping[str, Any], name: str) -> Optional[str]:
    scaling = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if not isinstance(scaling, dict):
        return None
    kind = scaling.get("rope_type") or scaling.get("type")
    if kind in (None, "default"):
        return None
    if not isinstance(kind, str):
        raise ConfigError(f"{one_line(name)}: rope_scaling.rope_type must be a string")
    factor = _optional_number(scaling, "factor", name)
    return f"{kind} x{factor}" if factor is not None else kind
