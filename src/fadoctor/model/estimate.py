"""`estimate(spec, plan)`: the peak of a training step's phases, and the largest batch that fits."""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

from fadoctor.model import activations as act
from fadoctor.model.memory import (
    BACKWARD_HIDDEN,
    BACKWARD_MLP,
    CONTEXT_BYTES,
    SLACK,
    MemoryEstimate,
    Phase,
    Term,
    linear_params,
    lora_params,
    params,
    state_terms,
)
from fadoctor.model.spec import ModelSpec, TrainingPlan


def loss_temporaries(spec: ModelSpec, plan: TrainingPlan) -> Tuple[float, float]:
    """Per token, beside the saved fp32 log-softmax: forward - the logits and their fp32 copy;
    backward - the fp32 gradients of the loss and of the log-softmax. Final-logit softcapping
    adds nothing here: its bf16 intermediates die before the fp32 upcast, and its gradients
    are made after the fp32 loss gradients are freed (on the H200, counting them overestimated
    both Gemma-2 cases by 4 bytes x vocabulary per token, in the forward and the backward)."""
    v = spec.vocab_size
    logits = act.FP32 if plan.method == "qlora" else act.BF16  # kbit prep: lm_head in fp32
    upcast = 0 if logits == act.FP32 else act.FP32
    return (logits + upcast) * v, 2 * act.FP32 * v


def layer_backward(spec: ModelSpec) -> float:
    """Gradients alive inside one layer's backward, per token."""
    return act.BF16 * (BACKWARD_HIDDEN * spec.hidden_size + BACKWARD_MLP * spec.intermediate_size)


def weight_copies(spec: ModelSpec, plan: TrainingPlan) -> int:
    """bf16 copies autocast makes of fp32 weights, kept for backward (mixed precision)."""
    if plan.method != "full" or plan.recipe != "mixed":
        return 0
    head = 0 if spec.tie_embeddings else spec.vocab_size * spec.hidden_size
    return act.BF16 * (linear_params(spec) + head)


def activation_terms(spec: ModelSpec, plan: TrainingPlan) -> Tuple[List[Term], float, float]:
    """The saved activations (as terms), one layer's bytes (recomputed under checkpointing),
    and the bytes the whole forward keeps."""
    tokens = plan.batch * plan.seq
    layer = act.total(act.layer(spec, plan)) * tokens
    ends = act.total(act.ends(spec, plan)) * tokens
    if plan.checkpointing:
        kept = act.checkpoint_input(spec, plan) * tokens * spec.num_layers
        terms = [Term(name="activations (checkpointed layer inputs)", bytes=int(kept),
                      note=f"{spec.num_layers} layers x {act.checkpoint_input(spec, plan):.0f} "
                           "B/token")]
    else:
        kept = layer * spec.num_layers
        terms = [Term(name="activations (saved for backward)", bytes=int(kept),
                      note=f"{spec.num_layers} layers x {layer / tokens:,.0f} B/token")]
    terms.append(Term(name="activations (embedding, final norm, loss)", bytes=int(ends),
                      note="the loss keeps an fp32 log-softmax over the vocabulary"))
    copies = weight_copies(spec, plan)
    if copies:
        terms.append(Term(name="autocast bf16 weight copies", bytes=copies,
                          note="kept for backward under mixed precision"))
    return terms, layer, kept + ends + copies


def estimate(spec: ModelSpec, plan: TrainingPlan, capacity: Optional[int] = None,
             context: int = CONTEXT_BYTES) -> MemoryEstimate:
    weights, grads, states = state_terms(spec, plan)
    saved_terms, layer, saved = activation_terms(spec, plan)
    tokens = plan.batch * plan.seq
    fwd_tmp, bwd_tmp = loss_temporaries(spec, plan)
    through = layer_backward(spec) * tokens
    base = weights.bytes + states.bytes
    recompute = (layer if plan.checkpointing else 0) + through
    phases = [
        Phase(name="forward (loss)", bytes=int(base + saved + fwd_tmp * tokens)),
        Phase(name="backward (start)", bytes=int(base + saved + bwd_tmp * tokens)),
        Phase(name="backward (end)", bytes=int(base + grads.bytes + recompute
                                               + (0 if plan.checkpointing else layer))),
        Phase(name="optimizer step", bytes=weights.bytes + grads.bytes + states.bytes),
    ]
    peak = max(phases, key=lambda p: p.bytes)
    terms = [weights, states, *saved_terms]
    if peak.name.startswith("forward"):
        terms.append(Term(name="logits and their fp32 copy (loss)", bytes=int(fwd_tmp * tokens),
                          note="transformers upcasts logits to fp32 for cross_entropy"))
    elif peak.name == "backward (start)":
        terms.append(Term(name="loss gradients (fp32)", bytes=int(bwd_tmp * tokens)))
    else:
        terms = [weights, states, grads]
        if peak.name == "backward (end)":
            terms.append(Term(name="one layer's activations and gradients", bytes=int(
                recompute + (0 if plan.checkpointing else layer))))
    return MemoryEstimate(
        plan=plan, params=params(spec), trainable=(params(spec) if plan.method == "full"
                                                   else lora_params(spec, plan)),
        terms=terms, phases=phases, peak_allocated=peak.bytes, context=context,
        slack=int(SLACK * peak.bytes), capacity=capacity)


def largest_batch(spec: ModelSpec, plan: TrainingPlan, capacity: int,
                  limit: int = 4096) -> int:
    """The largest micro-batch at this sequence length whose estimate fits (0: none)."""
    return _largest(lambda n: plan.model_copy(update={"batch": n}), spec, capacity, limit)


def largest_seq(spec: ModelSpec, plan: TrainingPlan, capacity: int) -> int:
    """The longest sequence (a multiple of 256) at this micro-batch that fits (0: none)."""
    top = max(1, (spec.max_positions or 131072) // 256)
    return 256 * _largest(lambda n: plan.model_copy(update={"seq": 256 * n}), spec, capacity,
                          top)


def _largest(make: Callable[[int], TrainingPlan], spec: ModelSpec, capacity: int,
             limit: int) -> int:
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if estimate(spec, make(mid), capacity).fits else (lo, mid - 1)
    return lo
