"""JAX refusing a CUDA library older than the one jaxlib was built against: its version check
(`_version_check` in JAX's CUDA plugin initialization) raises "Found cuDNN version 8500, but JAX
was built against version 8600, which is newer. The copy of cuDNN that is installed must be at
least as new as the version against which JAX was built." for CUDA, cuDNN, cuBLAS, cuSOLVER,
cuSPARSE, cuFFT, CUPTI and NCCL. In a process that imports torch first, the older copy is the one
torch's wheel brought and loaded: the libraries are backward compatible, so loading the newer
one first serves both (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_FOUND = re.compile(r"Found (CUDA|cuDNN|cuBLAS|cuSOLVER|cuSPARSE|cuFFT|CUPTI|NCCL) version (\d+), "
                    r"but JAX was built against version (\d+), which is newer")
_TORCH_TOO = re.compile(r"\bimport torch\b|\btorch\b", re.I)


def _readable(name: str, code: int) -> str:
    """CUDA 12010 -> 12.1, cuDNN 8500 -> 8.5.0 and 90100 -> 9.1.0; others as printed."""
    if name == "CUDA":
        return f"{code // 1000}.{code % 1000 // 10}"
    if name == "cuDNN":
        scale = 10000 if code >= 90000 else 1000
        return f"{code // scale}.{code % scale // 100}.{code % 100}"
    return str(code)


def older_library(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FOUND, ("but jax was built against",))
    if hit is None:
        return []
    name, found, built = hit[1].group(1), int(hit[1].group(2)), int(hit[1].group(3))
    have, need = _readable(name, found), _readable(name, built)
    torch = ctx.first(_TORCH_TOO, ("torch",))
    fixes = [Remedy(summary=f"Load JAX's {name} first: initialize JAX's backend before "
                    "importing torch (`import jax; jax.devices()` at the top of the program), so "
                    f"the newer {name}, which is backward compatible, serves both; or upgrade the "
                    f"{name} torch brought to at least {need} (its nvidia-*-cu12 pip package).",
                    code="import jax\njax.devices()  # before `import torch`")] if torch else []
    fixes.append(Remedy(summary=f"Install {name} {need} or newer where JAX loads it (the "
                        "nvidia-*-cu12 pip packages that `pip install -U \"jax[cuda12]\"` brings, "
                        "or the system's CUDA libraries ahead of older copies on LD_LIBRARY_PATH), "
                        f"or a jaxlib built against the {name} {have} installed."))
    return [Signal("jax_library", Category.VERSION_CONFLICT if torch else
                   Category.CUDA_RUNTIME_MISMATCH,
                   f"JAX was built against {name} {need} and found {have}, an older copy"
                   + (" (torch, imported first, loaded its own)" if torch else ""),
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(torch[0])] if torch else [])]), NAMED,
                   fixes)]
