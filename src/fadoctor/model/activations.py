"""Bytes autograd keeps for backward, per token, for one decoder layer and for the model's ends.

The terms follow Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models" (arXiv:2205.05198) §4.1, which counts the tensors each operator saves
(34·s·b·h bytes per layer for a GPT layer, plus 5·a·s²·b for the attention matrix) - here
counted for the layers transformers actually builds (RMSNorm in fp32, grouped-query attention,
gated MLPs, rotary embeddings that save nothing per token), and for what each training method
freezes: a frozen Linear saves nothing (its weight gradient is not needed), a trainable one its
input, a LoRA adapter (peft keeps adapters in fp32) an fp32 copy of its input and its rank-r
output. FlashAttention and PyTorch SDPA's fused kernels save q, k, v, the output and a
per-head log-sum-exp; the eager path also saves the s x s attention matrix in three forms (the
term FlashAttention removes). Each term was checked against torch's saved-tensor hooks on real
transformers layers (tests/model/test_activations.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

from fadoctor.model.spec import ModelSpec, TrainingPlan

BF16 = 2  # bytes of a bf16 activation
FP32 = 4
LSE = 4  # the softmax log-sum-exp FlashAttention keeps per query head, fp32


@dataclass(frozen=True)
class Precision:
    """Dtypes of a run: the residual stream, and whether each Linear casts its input."""

    residual: int  # bytes: bf16 model 2; fp32 residual (mixed, QLoRA after kbit prep) 4
    # bytes of a Linear's output, hence of q, k, v and the MLP: bitsandbytes' Linear4bit computes
    # in bf16 but returns its input's dtype, fp32 after kbit prep (measured on the H200: the
    # QLoRA layer saves fp32 q, k, v and MLP tensors, tests/fixtures/model_memory/h200.json)
    compute: int
    autocast: bool  # mixed precision: every Linear casts its fp32 input to bf16 anew
    adapter_copies: bool  # LoRA casts a bf16 input to fp32: a new tensor per adapter


def precision(plan: TrainingPlan) -> Precision:
    if plan.method == "qlora":  # prepare_model_for_kbit_training: non-4-bit weights in fp32
        return Precision(residual=FP32, compute=FP32, autocast=False, adapter_copies=False)
    if plan.method == "full" and plan.recipe == "mixed":
        return Precision(residual=FP32, compute=BF16, autocast=True, adapter_copies=False)
    return Precision(residual=BF16, compute=BF16, autocast=False, adapter_copies=True)


Terms = List[Tuple[str, float]]


def targeted(spec: ModelSpec, plan: TrainingPlan, names: Tuple[str, ...]) -> List[str]:
    """Which of a projection group's modules carry LoRA adapters (fused groups count once)."""
    if plan.method == "full":
        return []
    fused = {"q_proj": "qkv_proj", "gate_proj": "gate_up_proj"}.get(names[0])
    if spec.structure.fused_qkv and fused:
        names = (fused,)
    if "all-linear" in plan.lora_targets:  # peft's shorthand: every Linear but the output layer
        return list(names)
    return [n for n in names if n in plan.lora_targets]


def linear_inputs(spec: ModelSpec, plan: TrainingPlan, group: Tuple[str, ...], d_in: int,
                  shared_bf16: bool, already_saved: bool = False) -> Terms:
    """What the Linears of one group (same input) save: the input of trainable weights, and
    each adapter's input copy and rank-r output. `shared_bf16`: the input is already bf16;
    `already_saved`: another operator keeps that very tensor."""
    p = precision(plan)
    modules = 1 if spec.structure.fused_qkv and len(group) > 1 else len(group)
    out: Terms = []
    if plan.method == "full" and not already_saved:
        casts = modules if p.autocast and not shared_bf16 else 1
        out.append((f"{'/'.join(group)} input", casts * BF16 * d_in))
    adapters = targeted(spec, plan, group)
    if adapters:
        # bf16 input: one fp32 copy per adapter; fp32 input: the input itself, once
        copies = len(adapters) if (p.adapter_copies or shared_bf16) else 1
        out.append((f"LoRA input of {'/'.join(adapters)}", copies * FP32 * d_in))
        out.append(("LoRA rank-r outputs", len(adapters) * FP32 * plan.lora_r))
    return out


def norm(spec: ModelSpec, plan: TrainingPlan, label: str) -> Terms:
    """RMSNorm upcasts to fp32: the fp32 input and 1/rms always (the residual needs its
    gradient), the normalized tensor only for a trainable weight."""
    p = precision(plan)
    out: Terms = [(f"{label} fp32 input and 1/rms", FP32 * spec.hidden_size + FP32)]
    if plan.method == "full":
        keep = FP32 if spec.structure.norm == "gemma" else p.residual
        out.append((f"{label} normalized (weight gradient)", keep * spec.hidden_size))
    return out


def attention(spec: ModelSpec, plan: TrainingPlan) -> Terms:
    """Per token: the fused kernels keep q, k, v, output and log-sum-exp; eager keeps k and v
    repeated to every query head and the s x s matrix (scores after softcapping, fp32
    probabilities, bf16 probabilities)."""
    q = spec.num_heads * spec.head_dim
    kv = spec.num_kv_heads * spec.head_dim
    width = precision(plan).compute
    if plan.attn != "eager" and width == FP32 and spec.gqa:
        return math_attention(spec, plan)
    if plan.attn != "eager":
        v = (q + 2 * kv) if spec.structure.fused_qkv else kv  # a view keeps the qkv storage
        return [("attention q, k, v, output", width * (2 * q + kv + v)),
                ("attention log-sum-exp", LSE * spec.num_heads)]
    repeated = q if spec.gqa else kv
    matrix = FP32 + BF16 + (BF16 if spec.attn_softcap else 0)
    terms = [("attention q, k, v (eager, repeated)", BF16 * (q + 2 * repeated)),
             ("attention matrix (eager)", float(matrix * spec.num_heads * plan.seq))]
    if plan.method == "full":  # a trainable o_proj keeps the transposed copy of the output
        terms.append(("attention output (eager, transposed copy)", BF16 * q))
    return terms


def math_attention(spec: ModelSpec, plan: TrainingPlan) -> Terms:
    """fp32 q, k, v with grouped-query heads (QLoRA after kbit prep): PyTorch's flash kernel
    takes no fp32 and, per scaled_dot_product_attention's docstring, GQA "works only for
    Flash_attention and math kernel on CUDA", so SDPA runs the math path, which keeps the
    scaled q, k and v repeated to every query head, and the fp32 s x s probabilities (on the
    H200, Qwen2.5-0.5B QLoRA saved 221,645 B/token/layer against 221,640 counted here)."""
    q = spec.num_heads * spec.head_dim
    return [("attention scaled q, repeated k, v (SDPA math, fp32)", FP32 * 3 * q),
            ("attention probabilities (SDPA math, fp32)", float(FP32 * spec.num_heads * plan.seq))]


def mlp(spec: ModelSpec, plan: TrainingPlan) -> Terms:
    inter = spec.intermediate_size
    width = precision(plan).compute
    out: Terms = [("MLP gate (activation input), activation output, up", 3 * width * inter)]
    return out + linear_inputs(spec, plan, ("down_proj",), inter, shared_bf16=True)


def layer(spec: ModelSpec, plan: TrainingPlan) -> Terms:
    """Bytes saved per token by one decoder layer (without checkpointing)."""
    h = spec.hidden_size
    p = precision(plan)
    shared = not p.autocast and p.residual == BF16
    terms: Terms = []
    terms += norm(spec, plan, "attention norm")
    terms += linear_inputs(spec, plan, ("q_proj", "k_proj", "v_proj"), h, shared_bf16=shared)
    terms += attention(spec, plan)
    # The fused kernels' output is o_proj's input: it follows q's memory layout, which the
    # elementwise rotary keeps token-major so that transformers' transpose().contiguous() is
    # free; Phi-3's rotary ends in torch.cat (head-major), and that copy is kept.
    copied = plan.attn != "eager" and spec.structure.fused_qkv
    terms += linear_inputs(spec, plan, ("o_proj",), spec.num_heads * spec.head_dim,
                           shared_bf16=True, already_saved=not copied)
    terms += norm(spec, plan, "MLP norm")
    terms += linear_inputs(spec, plan, ("gate_proj", "up_proj"), h, shared_bf16=shared)
    terms += mlp(spec, plan)
    for extra in range(spec.structure.norms_per_layer - 2):
        terms += norm(spec, plan, f"extra norm {extra + 1}")
    return terms


def ends(spec: ModelSpec, plan: TrainingPlan) -> Terms:
    """Bytes saved per token outside the layers: ids, final norm, lm_head input, the loss's
    fp32 log-softmax (transformers upcasts logits to fp32 before cross_entropy)."""
    v = spec.vocab_size
    terms: Terms = [("input ids and labels", 16)]
    terms += norm(spec, plan, "final norm")
    if plan.method != "full":  # nothing before the first adapter needs a gradient
        terms += [(f"{label} (first layer: none)", -b) for label, b in norm(spec, plan, "norm")]
    if plan.method == "full":
        terms.append(("lm_head input", BF16 * spec.hidden_size))
    if spec.final_softcap:
        terms.append(("final logit softcapping (tanh output)", BF16 * v))
    terms.append(("loss log-softmax (fp32)", FP32 * v))
    return terms


def checkpoint_input(spec: ModelSpec, plan: TrainingPlan) -> float:
    """With gradient checkpointing a layer keeps only its input (the residual stream)."""
    return float(precision(plan).residual * spec.hidden_size)


def total(terms: Terms) -> float:
    return sum(b for _, b in terms)
