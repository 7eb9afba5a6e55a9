"""What a kernel failure means and what to do about it: the error's category, and remedies built
from the installed families, the SDPA backends that passed, and the tested snippets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence

from fadoctor.checks.base import version
from fadoctor.checks.import_remedies import exact_wheel
from fadoctor.checks.remedies import (
    reinstall_flash_attn,
    remedy,
    sdpa_fallback,
    torch_variant_remedies,
)
from fadoctor.facts.model import Facts, Family
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.snippets import sdpa_backends_code, snippet

SDPA_NAMES = {"sdpa_flash": "SDPA flash", "sdpa_efficient": "SDPA efficient",
              "sdpa_cudnn": "SDPA cuDNN", "sdpa_math": "SDPA math", "sdpa": "PyTorch SDPA"}
_NO_IMAGE = ("no kernel image is available", "invalid device function")
_GPU = ("only supports Ampere GPUs or newer", "only supports gpu architectures",
        "unsupported architecture", "compute capability")
_HEAD_DIM = re.compile(r"head[ _]?dim|head dimension", re.IGNORECASE)
_DTYPE = re.compile(r"dtype|data type|only supports? (fp16|bf16|half)", re.IGNORECASE)
_REFUSAL = re.compile(r"support|must be|should be|only|not implemented", re.IGNORECASE)
_UNSUPPORTED = re.compile(r"not (yet )?supported|unsupported", re.IGNORECASE)


@dataclass(frozen=True)
class KernelError:
    category: Category
    explanation: str
    unsupported_input: bool = False  # the target refuses this input: not a broken kernel


def classify_error(message: str, exception_type: Optional[str] = None) -> KernelError:
    """The root cause behind a kernel call's error (its text, and the exception's type)."""
    lowered = message.lower()
    if any(s in lowered for s in _NO_IMAGE):
        return KernelError(Category.NO_KERNEL_IMAGE, "the binary has no kernel for this GPU's "
                           "architecture")
    if any(s.lower() in lowered for s in _GPU):
        return KernelError(Category.GPU_UNSUPPORTED, "it does not support this GPU")
    if _REFUSAL.search(message) and _HEAD_DIM.search(message):
        return KernelError(Category.HEAD_DIM_UNSUPPORTED, "it does not take this head dimension",
                           unsupported_input=True)
    if _REFUSAL.search(message) and _DTYPE.search(message):
        return KernelError(Category.DTYPE_UNSUPPORTED, "it does not take this dtype",
                           unsupported_input=True)
    if exception_type == "NotImplementedError" or _UNSUPPORTED.search(message):
        return KernelError(Category.INFO, "it does not implement this input",
                           unsupported_input=True)
    return KernelError(Category.KERNEL_FAILURE, "the kernel failed at run time")


def restrict_sdpa(passed: Sequence[str], torch_version: Optional[str]) -> Optional[Remedy]:
    """Keep SDPA to the backends that passed here (torch >= 2.3 has sdpa_kernel)."""
    tv = version(torch_version)
    names = [p[len("sdpa_"):] for p in passed if p.startswith("sdpa_") and p != "sdpa_math"]
    if not names or tv is None or (tv.major, tv.minor) < (2, 3):
        return None
    return Remedy(summary=f"Keep PyTorch SDPA on the backends that passed here ({', '.join(names)}): "
                  "sdpa_kernel applies to everything run inside the block, forward and backward.",
                  code=sdpa_backends_code(names))


def family_remedies(facts: Facts, matrix: Matrix, family: Family, category: Category,
                    passed: Sequence[str]) -> List[Remedy]:
    """A family's kernel failed: the matching build, SDPA's backends that passed, the drop-in."""
    fa = facts.family(family)
    torch = facts.torch.data
    remedies: List[Remedy] = []
    if family == Family.FA2 and torch is not None:
        exact = exact_wheel(facts, matrix, torch)
        if exact is not None:
            remedies.append(exact)
        elif fa is not None and fa.version:
            remedies.append(reinstall_flash_attn(fa.version))
    elif fa is not None and fa.distribution and category != Category.GPU_UNSUPPORTED:
        dist, pinned = fa.distribution, fa.version
        remedies.append(remedy(f"Reinstall {dist} (or move to its newest release): a kernel that "
                               "fails on a supported GPU is a broken install or a bug of that "
                               "release.", lambda: [command(
                                   "pip", "install", "--force-reinstall", "--no-deps",
                                   requirement(dist, pinned))] if pinned else []))
    restricted = restrict_sdpa(passed, torch.version if torch else None)
    if any(p.startswith("sdpa_") for p in passed):
        remedies.append(Remedy(summary="Meanwhile: the same call on PyTorch SDPA, which passed "
                               "here (flash_attn_func's layout, GQA, causal).",
                               code=snippet("sdpa_flash_attn_func").code))
        if restricted is not None:
            remedies.append(restricted)
        remedies.append(sdpa_fallback("SDPA passed here."))
    return remedies


def sdpa_remedies(facts: Facts, matrix: Matrix, category: Category, passed: Sequence[str]
                  ) -> List[Remedy]:
    """An SDPA backend failed: the backends that passed, or torch's build for this GPU."""
    torch = facts.torch.data
    remedies: List[Remedy] = []
    restricted = restrict_sdpa(passed, torch.version if torch else None)
    if restricted is not None:
        remedies.append(restricted)
    if category in (Category.NO_KERNEL_IMAGE, Category.GPU_UNSUPPORTED):
        remedies += torch_variant_remedies(matrix, facts, "torch has no kernel for this GPU.")
    return remedies


def busy_remedy() -> Remedy:
    return Remedy(summary="Run the check again when the GPU is free, or point it at an idle GPU "
                  "(CUDA_VISIBLE_DEVICES=N fadoctor check).")
