"""The whole answer for one model on one machine (pure): needs, support, memory, recommendation."""

from __future__ import annotations

from typing import List, Optional

from packaging.version import Version
from pydantic import BaseModel, ConfigDict

from fadoctor.matrix import Matrix
from fadoctor.model.estimate import estimate, largest_batch, largest_seq
from fadoctor.model.memory import MemoryEstimate
from fadoctor.model.spec import ModelSpec, TrainingPlan
from fadoctor.model.support import (
    ATTN_IMPLEMENTATION,
    HALF,
    Here,
    Support,
    as_proven,
    assess,
    needs,
)
from fadoctor.safety.shell import Installer, command, into


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Recommendation(Frozen):
    attn_implementation: str  # for from_pretrained(..., attn_implementation=...)
    why: str
    commands: List[str] = []  # safe to copy: install what the model needs


class ModelAdvice(Frozen):
    spec: ModelSpec
    needs: List[str]
    dtype_note: Optional[str] = None  # the config's dtype is one flash-attention cannot run
    support: List[Support]
    memory: MemoryEstimate
    largest_batch: Optional[int] = None
    largest_seq: Optional[int] = None
    recommendation: Recommendation


def advice_into(advice: ModelAdvice, installer: Installer) -> ModelAdvice:
    """The advice with its commands run by the examined interpreter (safety.shell.into)."""
    rec = advice.recommendation
    commands = [into(c, installer) for c in rec.commands]
    return advice.model_copy(update={"recommendation": rec.model_copy(
        update={"commands": commands})})


def recommend(spec: ModelSpec, rows: List[Support], here: Here) -> Recommendation:
    """A working installed family first (transformers' own switch), then an installable FA2
    release, then SDPA where transformers offers it for the family, else eager."""
    for row in rows:
        if row.ok and row.implementation in ("fa2", "fa3"):
            return Recommendation(attn_implementation=ATTN_IMPLEMENTATION[row.implementation],
                                  why=f"{row.label} {row.version} supports what the model needs")
    fa2 = next(r for r in rows if r.implementation == "fa2")
    fa2_possible = not fa2.head_dim_problem and not fa2.dtype_problem and fa2.minimum is not None
    commands = []
    if fa2_possible and (not here.ccs or any(Version(cc) >= Version("8.0") for cc in here.ccs)):
        # The exact wheel (or build) depends on the torch build, Python and glibc: `fix` plans
        # it; an open range here would be the guess fadoctor exists to replace.
        commands = [command("fadoctor", "fix", "--print-pins", "--family", "fa2")]
    sdpa_ok = [r for r in rows if r.implementation.startswith("sdpa") and r.ok]
    if spec.structure.sdpa_supported and (sdpa_ok or not here.ccs):
        backends = ", ".join(r.label.split()[-1] for r in sdpa_ok) or "to be seen on the GPU"
        why = as_proven(here.unproven, f"PyTorch SDPA covers the model's needs here ({backends})",
                        f"PyTorch SDPA covers the model's needs ({backends})")
        if commands:
            why += (f"; flash-attn {fa2.minimum} or newer would serve it too (`fadoctor fix` "
                    "prints the exact install)")
        return Recommendation(attn_implementation="sdpa", why=why, commands=commands)
    reason = ("transformers has no SDPA path for this family (attention logit softcapping)"
              if not spec.structure.sdpa_supported else "no SDPA backend covers its needs here")
    if commands:
        return Recommendation(attn_implementation="flash_attention_2", commands=commands,
                              why=f"{reason}: install flash-attn {fa2.minimum} or newer (the "
                                  "exact wheel or build: `fadoctor fix --print-pins --family "
                                  "fa2`), or use attn_implementation='eager' (quadratic memory)")
    return Recommendation(attn_implementation="eager", commands=commands,
                          why=f"{reason}, and no flash-attention family serves it here: eager "
                              "attention keeps the s x s matrix (quadratic memory)")


def advise(spec: ModelSpec, plan: TrainingPlan, matrix: Matrix, here: Here,
           capacity: Optional[int] = None) -> ModelAdvice:
    rows = assess(spec, matrix, here)
    advice = recommend(spec, rows, here)
    if plan.attn == "sdpa" and advice.attn_implementation != "sdpa":
        # the estimate is for what the recommendation runs
        plan = plan.model_copy(update={"attn": "eager" if advice.attn_implementation == "eager"
                                       else "flash_attention_2"})
    memory = estimate(spec, plan, capacity)
    note = None
    if spec.dtype and spec.dtype not in HALF:
        note = (f"the config says {spec.dtype}: load the model in bf16 (torch_dtype=torch.bfloat16; "
                "dtype= in recent transformers): flash-attention runs fp16 and bf16 only")
    return ModelAdvice(
        spec=spec, needs=needs(spec), dtype_note=note, support=rows, memory=memory,
        recommendation=advice,
        largest_batch=largest_batch(spec, plan, capacity) if capacity else None,
        largest_seq=largest_seq(spec, plan, capacity) if capacity else None)
