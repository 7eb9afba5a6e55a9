"""Run the attention-kernel stages in the target interpreter, beside the main worker.

The registry puts them in lanes of their own: SDPA's cases in one worker, the families' in
another, so that the first CUDA work (lazy kernel loading, library handles) and the families'
imports overlap the main worker's imports instead of following them; `fadoctor bench` times its
targets one after another in a third. Each stage is crash-isolated by the runner like any other.
Compile and JIT caches (Inductor, Triton, CuTe DSL, CUDA, torch's jiterator) go to a temporary
folder that is removed when the workers are done; the main worker's environment is untouched.
The one exception is a family's own compile cache (flash-attn-4's), kept in fadoctor's cache folder
outside the examined environment and keyed by the family's release, torch, the GPUs and the
driver (`in_target/attention/jitcache.py`), so that a second `check` does not JIT-compile again.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from fadoctor.in_target import attention, registry
from fadoctor.in_target.tables import FAMILIES
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

# The full grid compiles and runs many more cases (flash-attn-4 JIT-compiles each configuration).
FULL_GRID_TIMEOUT = 1200.0


@dataclass(frozen=True)
class KernelOptions:
    smoke: str = "none"  # none | default | full
    compile: bool = False
    device: Optional[str] = None  # None: CUDA when torch has it; "cpu" runs the harness on CPU
    shape: Mapping[str, int] = field(default_factory=dict)  # batch, seqlen, heads, kv_heads

    @property
    def wanted(self) -> bool:
        return self.smoke != "none" or self.compile

    def groups(self) -> List[str]:
        return (["smoke"] if self.smoke != "none" else []) + (["compile"] if self.compile else [])


def stage_options(options: KernelOptions, extra: Optional[Mapping[str, Any]] = None
                  ) -> Dict[str, str]:
    """The worker options the attention stages read (one JSON object)."""
    out: Dict[str, Any] = {"grid": "full" if options.smoke == "full" else "default",
                           "families": FAMILIES}
    if options.device:
        out["device"] = options.device
    if options.shape:
        out["shape"] = dict(options.shape)
    out.update(extra or {})
    return {attention.OPTION: json.dumps(out)}


def environment(base: Mapping[str, str], cache_root: str) -> Dict[str, str]:
    """`base` with every compile/JIT cache moved into `cache_root`."""
    env = dict(base)
    for name in CACHE_VARIABLES:
        folder = os.path.join(cache_root, name.lower())
        os.makedirs(folder, exist_ok=True)
        env[name] = folder
    return env


def jit_cache_root(environ: Mapping[str, str]) -> Optional[str]:
    """fadoctor's folder for the families' compile caches: $FADOCTOR_CACHE_DIR, else
    $XDG_CACHE_HOME/fadoctor, else ~/.cache/fadoctor, then `jit`. FADOCTOR_CACHE_DIR set empty
    turns the cache off (every check then pays the first-call JIT)."""
    chosen = environ.get("FADOCTOR_CACHE_DIR")
    if chosen is not None:
        return os.path.join(chosen, "jit") if chosen else None
    home = environ.get("HOME") or os.path.expanduser("~")
    base = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(base, "fadoctor", "jit")


def jit_key(driver: Any) -> Optional[str]:
    """What a compiled kernel depends on that the parent knows: the driver's version and each
    GPU's name and compute capability (None when the driver or its GPUs are unknown)."""
    if driver is None or not driver.version or not driver.gpus:
        return None
    gpus = "+".join(sorted({f"{g.name}-sm{g.compute_capability}" for g in driver.gpus}))
    return f"driver{driver.version}-{gpus}"


def jit_options(environ: Mapping[str, str], driver: Any, options: KernelOptions) -> Dict[str, str]:
    """The stage options that let a family keep its compile cache: only on a real GPU (no
    `device` forced) that the driver describes, and while fadoctor's cache is on."""
    root, key = jit_cache_root(environ), jit_key(driver)
    if root is None or key is None or options.device is not None:
        return {}
    return {"jit_cache": root, "jit_key": key}


def stage_timeouts(stages: Sequence[str], options: KernelOptions,
             given: Optional[Mapping[str, float]] = None) -> Dict[str, float]:
    """The registry's timeouts, longer for the full grid, and what the user gave (--timeout)."""
    out = {s: FULL_GRID_TIMEOUT for s in stages if options.smoke == "full" and
           registry.BY_NAME[s].group == "smoke"}
    out.update({s: t for s, t in (given or {}).items() if s in stages})
    return out


class KernelWorkers:
    """The kernel stages under way, one worker per lane, with their cache folder."""

    def __init__(self, python: str, environ: Mapping[str, str], options: KernelOptions,
                 progress: Optional[Progress] = None,
                 stages: Optional[Sequence[str]] = None,
                 stage_extra: Optional[Mapping[str, Any]] = None,
                 timeouts: Optional[Mapping[str, float]] = None,
                 driver: Any = None) -> None:
        chosen = list(stages) if stages is not None else registry.names(groups=options.groups())
        self.cache_root = tempfile.mkdtemp(prefix="fadoctor-jit-")
        env = environment(environ, self.cache_root)
        extra = {**(stage_extra or {}), **jit_options(environ, driver, options)}
        worker_options = stage_options(options, extra)
        limits = stage_timeouts(chosen, options, timeouts)
        self._runs = [Background(python, lane, timeouts=limits, env=env, progress=progress,
                                 options=worker_options)
                      for lane in registry.lanes(chosen).values()]

    def wait(self) -> Dict[str, StageOutcome]:
        outcomes: Dict[str, StageOutcome] = {}
        try:
            for run in self._runs:
                outcomes.update(run.wait())
        finally:
            shutil.rmtree(self.cache_root, ignore_errors=True)
        return outcomes


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


def _run_of(model: Any, outcomes: Mapping[str, StageOutcome], kind: str, grid: Optional[str]
            ) -> Any:
    from fadoctor.facts.model import KernelRun, probe_of

    probes = {dict(registry.BY_NAME[stage].params)["target"]: probe_of(model, outcomes[stage])
              for stage in registry.names(groups=(kind,)) if stage in outcomes}
    return KernelRun[model](grid=grid, targets=probes)


def assemble(outcomes: Mapping[str, StageOutcome], options: KernelOptions,
             skipped: Optional[str] = None) -> Dict[str, Any]:
    """The `smoke` and `compile` facts from the kernel stages' outcomes (or why none ran)."""
    from fadoctor.facts.kernels import CompileTarget, SmokeTarget
    from fadoctor.facts.model import KernelRun

    out: Dict[str, Any] = {}
    if options.smoke != "none":
        out["smoke"] = (KernelRun[SmokeTarget](grid=options.smoke, skipped=skipped) if skipped
                        else _run_of(SmokeTarget, outcomes, "smoke", options.smoke))
    if options.compile:
        out["compile"] = (KernelRun[CompileTarget](skipped=skipped) if skipped
                          else _run_of(CompileTarget, outcomes, "compile", None))
    return out
