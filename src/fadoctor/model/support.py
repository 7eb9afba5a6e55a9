"""Which attention implementation can train a model here: its needs against the matrix, per
flash-attention family and PyTorch SDPA backend, on the GPUs at hand. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict

from fadoctor.matrix import Matrix
from fadoctor.matrix.attention import Implementation
from fadoctor.model.spec import ModelSpec

if TYPE_CHECKING:
    from fadoctor.facts.model import Facts

LABELS: Dict[str, str] = {
    "fa2": "FlashAttention-2 (flash-attn)", "fa3": "FlashAttention-3 (flash_attn_3)",
    "fa4": "FlashAttention-4 (flash-attn-4)", "sdpa_flash": "PyTorch SDPA flash",
    "sdpa_efficient": "PyTorch SDPA efficient", "sdpa_cudnn": "PyTorch SDPA cuDNN"}
# transformers' attn_implementation for each (FA4 has none in transformers' own switch).
ATTN_IMPLEMENTATION = {"fa2": "flash_attention_2", "fa3": "flash_attention_3",
                       "sdpa_flash": "sdpa", "sdpa_efficient": "sdpa", "sdpa_cudnn": "sdpa"}
HALF = ("bfloat16", "float16")


@dataclass(frozen=True)
class Here:
    """What the machine has: installed family versions, torch, the GPUs' compute capabilities."""

    families: Dict[str, str] = field(default_factory=dict)  # fa2 -> "2.8.3"
    torch: Optional[str] = None
    ccs: Tuple[str, ...] = ()
    unproven: str = ""  # why nothing can be said to work here (no GPU to run attention on)


def as_proven(unproven: str, here: str, on_paper: str) -> str:
    """The one wording of a claim that something works here (`model`'s recommendation, FAD150):
    `here` where a GPU can prove it, else unproven and why, with what holds `on_paper`."""
    return f"unproven here ({unproven}): on paper {on_paper}" if unproven else here


def unproven_of(facts: Facts) -> str:
    """Why nothing can be said to work here: a CPU-only torch, torch seeing no GPU, no NVIDIA
    GPU (FAD120 skips for the same reasons); empty when a GPU can run it, or the facts do not
    say."""
    from fadoctor.install.views import torch_view

    torch = torch_view(facts)  # imported, or read from its files (model reads them statically)
    if torch is not None and not torch.cuda and not torch.hip:
        return f"torch {torch.version} is CPU-only"
    imported = facts.torch.data
    if imported is not None and imported.cuda_available is False:
        return "torch sees no GPU"
    driver = facts.driver.data
    if driver is not None and not driver.present:
        return "no NVIDIA GPU"
    return ""


class Support(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    implementation: str  # fa2, fa3, fa4, sdpa_flash, ...
    label: str
    version: Optional[str] = None  # the installed release (torch's for SDPA)
    ok: Optional[bool] = None  # None: unknown (not installed, or a fact not in the matrix)
    problems: List[str] = []
    head_dim_problem: bool = False
    dtype_problem: bool = False
    minimum: Optional[str] = None  # the first release with every feature the model needs


def needs(spec: ModelSpec) -> List[str]:
    out = []
    if spec.gqa:
        out.append("gqa")
    if spec.sliding_layers:
        out.append("sliding_window")
    if spec.attn_softcap:
        out.append("softcap")
    if spec.alibi:
        out.append("alibi")
    return out


def _version(text: Optional[str]) -> Optional[Version]:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def minimum(matrix: Matrix, impl: str, wanted: Sequence[str]) -> Optional[str]:
    """The lowest release bound of the features `wanted` (from their '>=' specifiers)."""
    bounds = []
    for feat in wanted:
        entry = next((f for f in matrix.attention_features
                      if f.implementation == impl and f.feature == feat), None)
        if entry is None:
            return None
        bounds += [Version(s.version) for s in entry.versions if s.operator == ">="]
    return str(max(bounds)) if bounds else None


def unknown_features(spec: ModelSpec, matrix: Matrix, impl: str) -> List[str]:
    """The model's needs that the matrix holds no entry for, for this implementation: unknown,
    which is neither supported nor unsupported."""
    held = {f.feature for f in matrix.attention_features if f.implementation == impl}
    return [feat for feat in needs(spec) if feat not in held]


def features(spec: ModelSpec, matrix: Matrix, impl: str, version: Optional[Version]) -> List[str]:
    problems = []
    for feat in needs(spec):
        entry = next((f for f in matrix.attention_features
                      if f.implementation == impl and f.feature == feat), None)
        if entry is None:
            continue  # unknown_features() names it
        elif version is not None and not entry.versions.contains(version, prereleases=True):
            problems.append(f"{feat.replace('_', ' ')} needs {impl} {entry.versions}")
    return problems


def head_dims(spec: ModelSpec, matrix: Matrix, impl: str, version: Optional[Version],
              ccs: Sequence[str]) -> List[str]:
    d, problems = spec.head_dim, []
    for limit in matrix.head_dim_limits:
        if limit.implementation != impl or (version is not None and not limit.versions.contains(
                version, prereleases=True)):
            continue
        if any(not limit.ccs or cc in limit.ccs for cc in ccs or [""]) and \
                d > limit.max_head_dim and d not in limit.also:
            where = f" on sm_{'/'.join(c.replace('.', '') for c in limit.ccs)}" if limit.ccs else ""
            problems.append(f"head dim {d} is above its limit of {limit.max_head_dim}{where}")
    for rule in matrix.backward_restrictions:
        if rule.implementation != impl or version is None or rule.dropout_only or not \
                rule.versions.contains(version, prereleases=True):
            continue
        bad = [cc for cc in ccs if cc in rule.ccs]
        if bad and rule.above < d <= rule.upto:
            problems.append(f"backward with head dim {d} fails on sm_{bad[0].replace('.', '')} "
                            f"in {impl} {rule.versions}")
    return problems


def fa4_training_problems(matrix: Matrix, version: Optional[Version],
                          ccs: Sequence[str]) -> List[str]:
    """FlashAttention-4's backward refuses some GPUs its forward accepts (8.x at every beta):
    training fails there (interface.py's _flash_attn_bwd arch assert)."""
    beta = matrix.fa4_release(version) if version is not None else None
    if beta is None:
        return []
    bad = [cc for cc in ccs if beta.accepts(Version(cc).major, "backward") is False]
    return [f"its backward (training) refuses sm_{bad[0].replace('.', '')} at {beta.version}"
            ] if bad else []


def bf16_problem(here: Here) -> Optional[str]:
    """Every recipe here computes in bf16, which needs Ampere (sm80) or newer."""
    old = [cc for cc in here.ccs if Version(cc) < Version("8.0")]
    return (f"bf16 needs sm80 or newer, and this GPU is sm_{old[0].replace('.', '')}: train in "
            "fp16" if old else None)


def assess(spec: ModelSpec, matrix: Matrix, here: Here) -> List[Support]:
    """One row per flash-attention family and SDPA backend."""
    rows = []
    impls: Tuple[Implementation, ...] = ("fa2", "fa3", "fa4", "sdpa_flash", "sdpa_efficient",
                                         "sdpa_cudnn")
    for impl in impls:
        text = here.torch if impl.startswith("sdpa") else here.families.get(impl)
        version = _version(text)
        if impl.startswith("sdpa") and version is not None:
            version = Version(f"{version.major}.{version.minor}")
        problems = features(spec, matrix, impl, version)
        dims = head_dims(spec, matrix, impl, version, here.ccs)
        if impl == "fa4":
            problems += fa4_training_problems(matrix, version, here.ccs)
        dtype = bf16_problem(here)
        bad_dtype = dtype is not None
        if dtype:
            problems.append(dtype)
        unknown = unknown_features(spec, matrix, impl)
        ok = None if version is None or (unknown and not (problems or dims)) else \
            not (problems or dims)
        problems += [f"{feat.replace('_', ' ')}: unknown (not in fadoctor's matrix)"
                     for feat in unknown]
        rows.append(Support(implementation=impl, label=LABELS[impl], version=text, ok=ok,
                            problems=problems + dims, head_dim_problem=bool(dims),
                            dtype_problem=bad_dtype, minimum=minimum(matrix, impl, needs(spec))))
    return rows


def here_of(facts: Optional[Facts]) -> tuple[Here, Optional[int]]:
    """The installed families, torch and GPUs the facts record, and the smallest GPU's memory."""
    from fadoctor.install.views import torch_view

    if facts is None:
        return Here(), None
    driver = facts.driver.data
    gpus = (driver.gpus or []) if driver else []  # None: not gathered
    torch = torch_view(facts)
    mems = [g.memory_mib for g in gpus if g.memory_mib]
    return (Here(families={fa.family.value: fa.version for fa in facts.flash_attention
                           if fa.installed and fa.version},
                 torch=torch.version if torch else None,
                 ccs=tuple(g.compute_capability for g in gpus if g.compute_capability),
                 unproven=unproven_of(facts)),
            min(mems) * 2**20 if mems else None)
