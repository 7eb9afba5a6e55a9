"""The `transformers` stage's model: what the installed transformers decided for each
`attn_implementation` (fadoctor.in_target.hf_attention asks it; fadoctor.checks.hf judges)."""

from __future__ import annotations

from typing import Dict, List, Optional, Union

from fadoctor.facts.frozen import Frozen


class AttnDecision(Frozen):
    """One `from_config(..., attn_implementation=requested)` on a tiny Llama model, offline."""

    requested: str
    resolved: Optional[str] = None  # what model.config._attn_implementation became; None: raised
    error: Optional[List[str]] = None  # the exception chain, outermost first ("Type: message")
    warnings: List[str] = []  # what transformers logged while deciding
    network: List[str] = []  # connections fadoctor refused while it decided
    hub_kernels: List[str] = []  # Hub repositories transformers asked `kernels` for


class TransformersAttention(Frozen):
    installed: bool
    version: Optional[str] = None
    torch: Optional[str] = None
    cuda_available: Optional[bool] = None
    known: Optional[List[str]] = None  # AttentionInterface's names (4.48+), with eager
    availability: Dict[str, Union[bool, str]] = {}  # transformers' own is_*_available() answers
    kernels_error: Optional[str] = None  # why `kernels` could not be watched, when installed
    decisions: List[AttnDecision] = []
