"""What differs across the ranks of a job (pure): each rank's properties, grouped by value."""

from __future__ import annotations

import os
from typing import Callable, Dict, List, Literal, Optional, Tuple

from fadoctor.checks.base import torch_view
from fadoctor.distributed.models import JobFacts, RankFacts
from fadoctor.distributed.report import Difference, Variant
from fadoctor.facts.model import Facts
from fadoctor.report import Severity

UNKNOWN = "unknown"
Properties = Dict[str, Optional[str]]  # key -> value; None: the rank could not tell
# Where ranks may legitimately differ: which GPU each sees is judged by FAD205 instead.
EXPECTED_TO_DIFFER = frozenset({"env CUDA_VISIBLE_DEVICES", "env NVIDIA_VISIBLE_DEVICES"})


def software(rank: RankFacts) -> Properties:
    """What the rank runs: a difference here means the ranks run different code."""
    facts = rank.facts
    torch = torch_view(facts)
    host = facts.host.data
    files = facts.files.data if facts.files is not None else None
    out: Properties = {
        "python": host.python_version if host else None,
        "torch": torch.version if torch else None,
        "torch CUDA": (torch.cuda or (f"ROCm {torch.hip}" if torch.hip else "none"))
        if torch else None,
        "torch C++11 ABI": None if torch is None or torch.cxx11_abi is None
        else str(torch.cxx11_abi),
        "torch git": files.torch.git_version if files and files.torch else None,
        "NCCL": rank.collectives.device.nccl_version
        if rank.collectives and rank.collectives.device else None,
    }
    for fa in facts.flash_attention:
        out[f"flash-attention {fa.family.value}"] = (
            f"{fa.distribution or fa.family.value} {fa.version or ''}".strip() if fa.installed
            else "not installed")
    modules = {e.path: e.module for e in files.extensions} if files else {}
    for entry in rank.extension_hashes:
        name = modules.get(entry.path) or os.path.basename(entry.path)
        out[f"extension {name}"] = entry.sha256[:16] if entry.sha256 else None
    return out


def packages(facts: Facts) -> Properties:
    """The other relevant distributions (triton, transformers, nvidia-*...), by version."""
    if facts.packages.data is None:
        return {}
    covered = {"torch", "flash-attn", "flash-attn-3", "flash-attn-4", "flash-attn4",
               "vllm-flash-attn"}
    out: Dict[str, List[str]] = {}
    for dist in facts.packages.data.distributions:
        if dist.name not in covered:
            out.setdefault(f"package {dist.name}", []).append(dist.version)
    return {k: ", ".join(v) for k, v in out.items()}


def _gpu(rank: RankFacts) -> Optional[str]:
    """The rank's own GPU, as the collective test saw it, else the LOCAL_RANK-th torch saw."""
    device = rank.collectives.device if rank.collectives else None
    if device is not None and device.name:
        return f"{device.name} (sm_{(device.capability or '?').replace('.', '')})"
    if device is not None and device.error:
        return "none"
    torch = rank.facts.torch.data
    index = rank.place.local_rank or 0
    if torch is not None and torch.devices is not None and index < len(torch.devices):
        found = torch.devices[index]
        return f"{found.name} (sm_{found.capability.replace('.', '')})"
    return None


def hardware(rank: RankFacts) -> Properties:
    driver = rank.facts.driver.data
    return {"GPU": _gpu(rank),
            "driver": (driver.version or UNKNOWN) if driver and driver.present else (
                "none" if driver else None),
            "driver CUDA": driver.cuda_version if driver else None}


def environment(rank: RankFacts) -> Properties:
    host = rank.facts.host.data
    merged = {**((host.environment or {}) if host else {}), **rank.environment}
    return {f"env {k}": v for k, v in merged.items()}


Group = Literal["software", "hardware", "environment"]
# (group, reader, the value of a key a rank's reader did not return)
_READERS: Tuple[Tuple[Group, Callable[[RankFacts], Properties], str], ...] = (
    ("software", software, "absent"),
    ("software", lambda r: packages(r.facts), "not installed"),
    ("hardware", hardware, UNKNOWN),
    ("environment", environment, "unset"),
)


def severity_of(key: str) -> Severity:
    """How bad a difference in `key` is: other code on some ranks is an error."""
    if key in EXPECTED_TO_DIFFER:
        return Severity.INFO
    if key.split(" ")[0] in ("python", "torch", "flash-attention", "extension", "NCCL"):
        return Severity.ERROR
    return Severity.WARNING


def differences(job: JobFacts) -> List[Difference]:
    """Every property with more than one value across the ranks, the most common value first."""
    out: List[Difference] = []
    for group, read, absent in _READERS:
        values = {rank.place.rank: read(rank) for rank in job.ranks}
        for key in sorted({k for props in values.values() for k in props}):
            by_value: Dict[str, List[int]] = {}
            for rank, props in values.items():
                value = props.get(key, absent)
                by_value.setdefault(UNKNOWN if value is None else value, []).append(rank)
            if len(by_value) > 1:
                out.append(_difference(job, key, group, by_value))
    return out


def _difference(job: JobFacts, key: str, group: Group, by_value: Dict[str, List[int]]
                ) -> Difference:
    nodes = {r.place.rank: r.place.node for r in job.ranks}
    variants = sorted((Variant(value=v, ranks=sorted(rs), nodes=sorted({nodes[r] for r in rs}))
                       for v, rs in by_value.items()), key=lambda v: (-len(v.ranks), v.ranks))
    known = [v for v in variants if v.value != UNKNOWN]
    severity = severity_of(key)
    if len(known) < 2 and severity == Severity.ERROR:  # known against unknown: say it, mildly
        severity = Severity.WARNING
    return Difference(key=key, group=group, severity=severity, variants=variants)
