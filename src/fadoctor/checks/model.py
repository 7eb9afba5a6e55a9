"""check --model: the model's attention needs and its training memory, against this machine."""

from __future__ import annotations

from typing import TYPE_CHECKING, List

from fadoctor.checks.base import Outcome, Skip, info
from fadoctor.facts.model import Facts
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity

if TYPE_CHECKING:
    from fadoctor.model.advice import ModelAdvice
    from fadoctor.model.spec import ModelFacts


def _advice(facts: Facts, matrix: Matrix, model: ModelFacts) -> ModelAdvice:
    from fadoctor.model.advice import advise
    from fadoctor.model.support import here_of

    here, capacity = here_of(facts)
    return advise(model.spec, model.plan, matrix, here, capacity)


def check_model_attention(facts: Facts, matrix: Matrix, model: ModelFacts) -> Outcome:
    advice = _advice(facts, matrix, model)
    name = advice.spec.name
    rec = advice.recommendation
    remedy = Remedy(summary=f'from_pretrained(..., attn_implementation="{rec.attn_implementation}")'
                    f": {rec.why}", commands=rec.commands)
    findings: List[Finding] = []
    sdpa = [r for r in advice.support if r.implementation.startswith("sdpa")]
    sdpa_blocked = advice.spec.structure.sdpa_supported and all(r.ok is False for r in sdpa)
    for row in advice.support:
        if row.ok is not False or not (row.head_dim_problem or row.dtype_problem):
            continue
        if row.implementation.startswith("sdpa") and not sdpa_blocked:
            continue  # another SDPA backend serves it
        category = Category.HEAD_DIM_UNSUPPORTED if row.head_dim_problem else \
            Category.DTYPE_UNSUPPORTED
        findings.append(Finding(
            severity=Severity.ERROR if row.implementation in ("fa2", "fa3", "fa4") else
            Severity.WARNING, category=category, subject=row.label,
            message=f"{name}: {row.label} {row.version} cannot train it: "
                    + "; ".join(row.problems),
            evidence={"head_dim": advice.spec.head_dim, "problems": row.problems},
            remedies=[remedy]))
    if advice.dtype_note:
        findings.append(Finding(severity=Severity.WARNING, category=Category.DTYPE_UNSUPPORTED,
                                message=f"{name}: {advice.dtype_note}",
                                evidence={"dtype": advice.spec.dtype}))
    features = [r.label for r in advice.support if r.ok and not r.problems]
    if not findings:
        from fadoctor.model.support import as_proven, unproven_of

        listed = ", ".join(features)
        works = as_proven(unproven_of(facts), f"works here with: {listed or 'none installed'}",
                          listed or "none")
        findings.append(info(f"{name}: needs {', '.join(advice.needs) or 'nothing special'}; "
                             f'{works}; use attn_implementation="{rec.attn_implementation}"',
                             recommendation=rec.model_dump()))
    return findings


def check_model_memory(facts: Facts, matrix: Matrix, model: ModelFacts) -> Outcome:
    from fadoctor.model.memory import GIB

    advice = _advice(facts, matrix, model)
    mem = advice.memory
    evidence = {"peak_allocated_gib": round(mem.peak_allocated / GIB, 2),
                "total_gib": round(mem.total / GIB, 2), "peak_phase": mem.peak_phase,
                "terms": {t.name: t.bytes for t in mem.terms}, "plan": mem.plan.model_dump()}
    if mem.capacity is None:
        return Skip("needs the GPU's memory, which the driver did not report")
    evidence["capacity_gib"] = round(mem.capacity / GIB, 2)
    what = f"{advice.spec.name} ({mem.plan.method}, batch {mem.plan.batch} x {mem.plan.seq})"
    if mem.fits:
        return [info(f"{what} needs about {mem.total / GIB:.1f} GiB of "
                     f"{mem.capacity / GIB:.1f} GiB", **evidence)]
    tips = []
    if advice.largest_batch:
        tips.append(f"micro-batch {advice.largest_batch} fits at {mem.plan.seq} tokens")
    if not mem.plan.checkpointing:
        tips.append("gradient checkpointing keeps one layer's activations")
    if mem.plan.method == "full":
        tips.append("LoRA or QLoRA keep gradients and optimizer states for the adapters only")
    return [Finding(severity=Severity.ERROR, category=Category.OUT_OF_MEMORY,
                    message=f"{what} needs about {mem.total / GIB:.1f} GiB at its peak "
                            f"({mem.peak_phase}); the GPU has {mem.capacity / GIB:.1f} GiB",
                    evidence=evidence,
                    remedies=[Remedy(summary="; ".join(tips) or "a GPU with more memory")])]
