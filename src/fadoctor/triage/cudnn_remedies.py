"""The fix for a check cuDNN's frontend makes before it builds a fused-attention graph (catalog
source `cudnn`): another attention backend where the shape or GPU is refused — Transformer
Engine's flash-attn path, or PyTorch SDPA without its cuDNN backend — and the cuDNN release the
message names where it names one (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.catalog_data import Entry
from fadoctor.triage.context import Context

# Transformer Engine reads both switches at every call (NVIDIA/TransformerEngine@v2.0:
# transformer_engine/pytorch/attention.py:438-439, default "1"): 0 turns that backend off.
TE_SWITCHES = "NVIDIA/TransformerEngine@v2.0:transformer_engine/pytorch/attention.py:438-439"
# PyTorch's switch for SDPA's cuDNN backend (torch==2.13.0:torch/backends/cuda/__init__.py:660)
TORCH_SWITCH = "torch.backends.cuda.enable_cudnn_sdp(False)"
_AT_LEAST = re.compile(r"(?:version (?:atleast|at least)|starting cudnn|requires cudnn(?: version)?"
                       r"|on cuDNN version|upgrading to) v?(\d+\.\d+(?:\.\d+)?)(?: and (?:above|newer)"
                       r"| or newer)?|(\d+\.\d+(?:\.\d+)?) and (?:above|newer)", re.I)
_BELOW = re.compile(r"(?:below|prior to) v?(\d+\.\d+(?:\.\d+)?)", re.I)
_OR_BELOW = re.compile(r"(\d+)\.(\d+) or below", re.I)


def needed(printed: str) -> Optional[Version]:
    """The cuDNN release the message says lifts it, if it names one."""
    found = _AT_LEAST.search(printed)
    if found:
        return Version(found.group(1) or found.group(2))
    found = _BELOW.search(printed)
    if found:
        return Version(found.group(1))
    upto = _OR_BELOW.search(printed)
    return Version(f"{upto.group(1)}.{int(upto.group(2)) + 1}") if upto else None


def _newer_cudnn(ctx: Context, version: Version) -> Remedy:
    major = ctx.torch_cuda.major if ctx.torch_cuda is not None else 12
    wheel = "nvidia-cudnn-cu12" if major == 12 else f"nvidia-cudnn-cu{major}"
    return Remedy(summary=f"cuDNN {version} or newer lifts this check: upgrade the cuDNN that "
                  f"torch loads ({wheel}, for torch's CUDA {major}).",
                  commands=[command("pip", "install", "--upgrade", f"{wheel}>={version}")])


def for_entry(ctx: Context, entry: Entry, category: Category) -> List[Remedy]:
    version = needed(entry.printed)
    newer = [_newer_cudnn(ctx, version)] if version is not None else []
    if category == Category.VERSION_CONFLICT:
        return [*newer, *_backends()]
    return [*_backends(), *newer]


def _backends() -> List[Remedy]:
    return [Remedy(summary="In Transformer Engine, turn its cuDNN fused attention off, so it "
                   f"takes flash-attn (or its unfused path) for this shape ({TE_SWITCHES}).",
                   commands=["export NVTE_FUSED_ATTN=0 NVTE_FLASH_ATTN=1"]),
            Remedy(summary="In PyTorch SDPA, turn the cuDNN backend off: SDPA then takes flash "
                   "or memory-efficient attention.", code=TORCH_SWITCH)]
