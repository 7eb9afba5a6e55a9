"""Run the attention-kernel stages in the target interpreter, beside the main worker.

Two more workers start with the collection: one runs the SDPA cases, one the flash-attention
families, so that the first CUDA work (lazy kernel loading, library handles) and the families'
imports overlap the main worker's imports instead of following them. Each stage is crash-isolated
by the runner like any other. Compile and JIT caches (Inductor, Triton, CuTe DSL, CUDA, torch's
jiterator) go to a temporary folder that is removed when the workers are done.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from fadoctor.probes import attention, worker
from fadoctor.probes.runner import Background, Progress, StageOutcome

# Where each tool keeps its compile/JIT cache, by the variable that moves it:
# TORCHINDUCTOR_CACHE_DIR: torch/_inductor/runtime/cache_dir_utils.py; TRITON_CACHE_DIR:
# triton/runtime/cache.py; CUTE_DSL_CACHE_DIR: nvidia-cutlass-dsl cutlass/base_dsl/
# cache_helpers.py (default $TMPDIR/<user>/cutlass_python_cache); FLASH_ATTENTION_CUTE_DSL_CACHE_DIR:
# flash-attention flash_attn/cute/cache_utils.py (FA4's own, opt-in); CUDA_CACHE_PATH: the CUDA
# driver's PTX JIT cache (~/.nv/ComputeCache); PYTORCH_KERNEL_CACHE_PATH: torch's jiterator
# (aten/src/ATen/native/cuda/jit_utils.cpp); TMPDIR: whatever else asks tempfile.
CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUTE_DSL_CACHE_DIR",
                   "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR", "CUDA_CACHE_PATH",
                   "PYTORCH_KERNEL_CACHE_PATH", "TMPDIR")

# Seconds per stage. The first stage of each worker also pays `import torch` and, for a
# family, its import (flash-attn-4: 8-12 s, then a JIT compile of its kernels on the first call).
IMPORT_ALLOWANCE = 180.0
TIMEOUTS = {("smoke", "default"): 120.0, ("smoke", "full"): 900.0, ("compile", None): 600.0,
            ("bench", None): 600.0}


@dataclass(frozen=True)
class KernelOptions:
    smoke: str = "none"  # none | default | full
    compile: bool = False
    device: Optional[str] = None  # None: CUDA when torch has it; "cpu" runs the harness on CPU
    shape: Mapping[str, int] = field(default_factory=dict)  # batch, seqlen, heads, kv_heads
    timeout: Optional[float] = None  # overrides every stage's default

    @property
    def wanted(self) -> bool:
        return self.smoke != "none" or self.compile


def stage_lists(options: KernelOptions) -> Tuple[List[str], List[str]]:
    """(SDPA worker's stages, family worker's stages)."""
    sdpa: List[str] = []
    families: List[str] = []
    if options.smoke != "none":
        sdpa += [attention.stage_name("smoke", t) for t in attention.SDPA_TARGETS]
        families += [attention.stage_name("smoke", t) for t in attention.FAMILY_TARGETS]
    if options.compile:
        sdpa.append(attention.stage_name("compile", "sdpa"))
        families += [attention.stage_name("compile", t) for t in attention.FAMILY_TARGETS]
    return sdpa, families


def timeouts(stages: List[str], options: KernelOptions) -> Dict[str, float]:
    out = {}
    for i, stage in enumerate(stages):
        kind, _ = attention.parse(stage)
        limit = TIMEOUTS.get((kind, options.smoke if kind == "smoke" else None), 600.0)
        if options.timeout is not None:
            limit = options.timeout
        out[stage] = limit + (IMPORT_ALLOWANCE if i == 0 and options.timeout is None else 0.0)
    return out


def stage_options(options: KernelOptions, extra: Optional[Mapping[str, Any]] = None
                  ) -> Dict[str, Any]:
    """What the stages read from the environment (attention.OPTIONS_ENV)."""
    out: Dict[str, Any] = {"grid": "full" if options.smoke == "full" else "default",
                           "families": worker.FAMILIES}
    if options.device:
        out["device"] = options.device
    if options.shape:
        out["shape"] = dict(options.shape)
    out.update(extra or {})
    return out


def environment(base: Mapping[str, str], cache_root: str, options: Mapping[str, Any]
                ) -> Dict[str, str]:
    env = dict(base)
    for name in CACHE_VARIABLES:
        folder = os.path.join(cache_root, name.lower())
        os.makedirs(folder, exist_ok=True)
        env[name] = folder
    env[attention.OPTIONS_ENV] = json.dumps(options)
    return env


class KernelWorkers:
    """The kernel stages under way in their own workers, with their cache folder."""

    def __init__(self, python: str, environ: Mapping[str, str], options: KernelOptions,
                 progress: Optional[Progress] = None,
                 stage_extra: Optional[Mapping[str, Any]] = None,
                 stages: Optional[Tuple[List[str], List[str]]] = None) -> None:
        self.cache_root = tempfile.mkdtemp(prefix="fadoctor-jit-")
        env = environment(environ, self.cache_root, stage_options(options, stage_extra))
        self._runs = [Background(python, group, timeouts=timeouts(group, options), env=env,
                                 progress=progress)
                      for group in (stages or stage_lists(options)) if group]

    def wait(self) -> Dict[str, StageOutcome]:
        outcomes: Dict[str, StageOutcome] = {}
        try:
            for run in self._runs:
                outcomes.update(run.wait())
        finally:
            shutil.rmtree(self.cache_root, ignore_errors=True)
        return outcomes


def _run_of(model: Any, outcomes: Mapping[str, StageOutcome], kind: str, targets: Any,
            grid: Optional[str]) -> Any:
    from pydantic import ValidationError

    from fadoctor.facts import Failure, FailureKind, KernelRun, Probe

    probes: Dict[str, Any] = {}
    for target in targets:
        outcome = outcomes.get(attention.stage_name(kind, target))
        if outcome is None:
            continue
        if not outcome.ok:
            assert outcome.failure is not None
            probes[target] = Probe.failed(Failure.model_validate(vars(outcome.failure)))
            continue
        try:
            probes[target] = Probe.success(model.model_validate(outcome.data))
        except ValidationError as exc:
            probes[target] = Probe.failed(Failure(
                kind=FailureKind.ERROR, reason=f"the worker's {outcome.stage} record is malformed: "
                f"{exc}"))
    return KernelRun[model](grid=grid, targets=probes)


def assemble(outcomes: Mapping[str, StageOutcome], options: KernelOptions,
             skipped: Optional[str] = None) -> Dict[str, Any]:
    """The `smoke` and `compile` facts from the kernel stages' outcomes (or why none ran)."""
    from fadoctor.facts import KernelRun
    from fadoctor.kernel_facts import CompileTarget, SmokeTarget

    out: Dict[str, Any] = {}
    if options.smoke != "none":
        out["smoke"] = (KernelRun[SmokeTarget](grid=options.smoke, skipped=skipped) if skipped
                        else _run_of(SmokeTarget, outcomes, "smoke", attention.TARGETS,
                                     options.smoke))
    if options.compile:
        targets = ("sdpa",) + attention.FAMILY_TARGETS
        out["compile"] = (KernelRun[CompileTarget](skipped=skipped) if skipped
                          else _run_of(CompileTarget, outcomes, "compile", targets, None))
    return out


def gate(driver: Any, options: KernelOptions) -> Optional[str]:
    """Why the kernel stages should not start (None: start them). Only a driver that reports
    no GPU stops them; an unknown driver lets the stages find out for themselves."""
    if options.device is not None:
        return None
    data = driver.data
    if data is None:
        return None
    listed = data.source in ("nvml", "nvidia-smi")  # procfs knows the driver, not the GPUs
    if not data.present or (listed and not data.gpus):
        return f"the driver probe ({data.source}) found no NVIDIA GPU"
    return None


def stage_label(stage: str) -> Optional[str]:
    """What a kernel stage is doing, for the progress line."""
    if not attention.is_stage(stage):
        return None
    kind, target = attention.parse(stage)
    verb = {"smoke": "testing the kernels of", "compile": "compiling", "bench": "timing"}[kind]
    return f"{verb} {target}"
