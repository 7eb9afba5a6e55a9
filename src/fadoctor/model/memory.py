"""The GPU memory of a training step: weights, gradients, AdamW states, activations, temporaries.

`estimate(spec, plan)` is pure. Its peak is comparable with `torch.cuda.max_memory_allocated`
(the caching allocator's live bytes); the CUDA context and the allocator's slack are added
apart, to compare with the GPU's memory. The phases of a step are held separately because their
peaks differ: the loss's fp32 logits at the end of the forward, the start of the backward (all
activations still saved), its end (all gradients allocated), and the optimizer step.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from pydantic import BaseModel, ConfigDict

from fadoctor.model import activations as act
from fadoctor.model.spec import ModelSpec, TrainingPlan

MIB = 2**20
GIB = 2**30
# NF4 with double quantization (QLoRA, Dettmers et al. 2023, §3): 4 bits per weight, one 8-bit
# absmax per 64 weights, one fp32 constant per 256 absmax blocks; without it, an fp32 absmax per
# 64 weights.
NF4_DOUBLE = 0.5 + 1 / 64 + 4 / (64 * 256)
NF4 = 0.5 + 4 / 64
# Beyond the allocated peak (not in torch.cuda.max_memory_allocated, added apart to compare with
# the GPU's memory). The CUDA context with cuBLAS loaded: 718,077,952 bytes (685 MiB) measured
# on the H200 (torch 2.11.0+cu130, driver 580; mem_get_info's used bytes less what the caching
# allocator reserved, tests/fixtures/model_memory/h200.json "context_bytes").
CONTEXT_BYTES = 685 * MIB
# The caching allocator's slack: max_memory_reserved / max_memory_allocated was 1.03-1.40 over
# the 14 H200 cases, median 1.115. Under memory pressure the allocator frees its cached blocks
# and retries before it fails, so the reserved peak overstates the need: the median is a margin.
SLACK = 0.12
# The gradients alive inside one layer's backward, per token, in bf16 hidden and MLP widths: the
# incoming gradient, the residual branch's and the norm's (4 x hidden), and the MLP's gate, up,
# activation and product gradients (4 x MLP width). Counted, not fitted: the two H200 cases whose
# peak is the end of the backward (Mistral-7B full and Phi-3 mixed, checkpointed) come out
# +2.2% and +1.3%.
BACKWARD_HIDDEN = 4
BACKWARD_MLP = 4


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Term(Frozen):
    name: str
    bytes: int
    note: str = ""


class Phase(Frozen):
    name: str  # forward, backward (start), backward (end), optimizer step
    bytes: int


class MemoryEstimate(Frozen):
    plan: TrainingPlan
    params: int
    trainable: int
    terms: List[Term]  # the breakdown at the peak
    phases: List[Phase]
    peak_allocated: int  # comparable with torch.cuda.max_memory_allocated
    context: int
    slack: int
    capacity: Optional[int] = None  # the GPU's memory, when known

    @property
    def total(self) -> int:
        return self.peak_allocated + self.context + self.slack

    @property
    def fits(self) -> Optional[bool]:
        return None if self.capacity is None else self.total <= self.capacity

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=lambda p: p.bytes).name


# -- parameters ---------------------------------------------------------------------------------


def layer_linears(spec: ModelSpec) -> List[Tuple[str, int, int]]:
    """(name, in, out) of each Linear of one decoder layer, as transformers names them."""
    h, inter = spec.hidden_size, spec.intermediate_size
    q, kv = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    if spec.structure.fused_qkv:
        return [("qkv_proj", h, q + 2 * kv), ("o_proj", q, h), ("gate_up_proj", h, 2 * inter),
                ("down_proj", inter, h)]
    return [("q_proj", h, q), ("k_proj", h, kv), ("v_proj", h, kv), ("o_proj", q, h),
            ("gate_proj", h, inter), ("up_proj", h, inter), ("down_proj", inter, h)]


def linear_params(spec: ModelSpec) -> int:
    """Weights (and biases) of every decoder-layer Linear: what QLoRA quantizes."""
    q, kv = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    per_layer = sum(i * o for _, i, o in layer_linears(spec))
    per_layer += (q + 2 * kv) if spec.structure.qkv_bias else 0
    per_layer += (2 * spec.intermediate_size + spec.hidden_size) if spec.mlp_bias else 0
    return per_layer * spec.num_layers


def other_params(spec: ModelSpec) -> int:
    """Embeddings, the output layer (unless tied) and the norms."""
    embed = spec.vocab_size * spec.hidden_size
    norms = (spec.structure.norms_per_layer * spec.num_layers + 1) * spec.hidden_size
    return embed * (1 if spec.tie_embeddings else 2) + norms


def lora_params(spec: ModelSpec, plan: TrainingPlan) -> int:
    if plan.method == "full":
        return 0
    names = set()
    for group in (("q_proj", "k_proj", "v_proj"), ("o_proj",), ("gate_proj", "up_proj"),
                  ("down_proj",)):
        names.update(act.targeted(spec, plan, group))
    per_layer = sum(plan.lora_r * (i + o) for n, i, o in layer_linears(spec) if n in names)
    return per_layer * spec.num_layers


def params(spec: ModelSpec) -> int:
    return linear_params(spec) + other_params(spec)


# -- persistent state ---------------------------------------------------------------------------


def state_terms(spec: ModelSpec, plan: TrainingPlan) -> Tuple[Term, Term, Term]:
    """Weights, gradients and AdamW's two moments (kept in the parameters' dtype)."""
    total, lora = params(spec), lora_params(spec, plan)
    if plan.method == "full":
        width = 4 if plan.recipe == "mixed" else 2
        what = "fp32 (master copy)" if width == 4 else "bf16"
        return (Term(name="weights", bytes=width * total, note=f"{total:,} parameters, {what}"),
                Term(name="gradients", bytes=width * total, note=what),
                Term(name="AdamW states", bytes=2 * width * total, note=f"two moments, {what}"))
    if plan.method == "qlora":
        base = int(NF4_DOUBLE * linear_params(spec)) + 4 * other_params(spec)
        note = "NF4 + double quant layers; embeddings, norms, lm_head fp32 (kbit prep)"
    else:
        base = 2 * total
        note = "bf16, frozen"
    return (Term(name="weights", bytes=base + 4 * lora,
                 note=f"{note}; {lora:,} LoRA parameters in fp32"),
            Term(name="gradients", bytes=4 * lora, note="LoRA only, fp32"),
            Term(name="AdamW states", bytes=8 * lora, note="LoRA only, fp32"))
