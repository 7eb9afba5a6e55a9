"""The estimate for one case of benchmarks/model_memory_gpu.py, as plain data (bench and tests)."""

from __future__ import annotations

from typing import Any, Dict, Mapping

from fadoctor.model.estimate import estimate
from fadoctor.model.spec import TrainingPlan, spec_from_config


def plan_of(case: Mapping[str, Any]) -> TrainingPlan:
    return TrainingPlan(method=case["method"], recipe=case.get("recipe", "bf16"),
                        batch=case["batch"], seq=case["seq"],
                        checkpointing=bool(case.get("checkpointing")), attn=case.get("attn", "sdpa"),
                        lora_r=case.get("lora_r", 16),
                        lora_targets=tuple(case.get("lora_targets") or ("all-linear",)))


def estimate_case(cfg: Mapping[str, Any], case: Mapping[str, Any]) -> Dict[str, Any]:
    result = estimate(spec_from_config(cfg, str(case.get("config", "model"))), plan_of(case))
    return {"peak_allocated_bytes": result.peak_allocated, "peak_phase": result.peak_phase,
            "phases": {p.name: p.bytes for p in result.phases},
            "terms": {t.name: t.bytes for t in result.terms}}
