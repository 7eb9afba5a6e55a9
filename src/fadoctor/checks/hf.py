"""What the installed transformers will really run for each `attn_implementation` (FAD121).

The facts are transformers' own decisions, taken offline in the target interpreter
(fadoctor.in_target.hf_attention); this module only reads them: runs, falls back (to what, and
whether that needs the network and downloads code), or fails with transformers' message.
"""

from __future__ import annotations

from typing import List, Optional

from fadoctor.checks.base import Outcome, Skip, why_unknown
from fadoctor.facts.model import Facts, Family
from fadoctor.facts.transformers import AttnDecision, TransformersAttention
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity

# The flash-attention family behind each of transformers' names (its FLASH_ATTENTION_COMPATIBILITY
# _MATRIX keys 2/3/4 check flash_attn, flash_attn_3 / flash_attn_interface, flash_attn.cute).
FAMILY_OF = {"flash_attention_2": Family.FA2, "flash_attention_3": Family.FA3,
             "flash_attention_4": Family.FA4}
HUB = ("downloads and runs that kernel's code from the Hugging Face Hub when the model loads "
       "(it needs the network then, or the kernel in the local Hub cache)")


def check_transformers(facts: Facts, matrix: Matrix) -> Outcome:
    probe = facts.transformers
    if probe is None:
        return Skip("needs transformers' own decisions, which these facts do not hold "
                    "(check --static, or facts saved by an older fadoctor)")
    if probe.data is None:
        return why_unknown("transformers' decisions", probe)
    hf = probe.data
    if not hf.installed:
        return Skip("transformers is not installed in the target environment")
    if not hf.decisions:
        return Skip("needs transformers' decisions, which it did not report")
    return [_finding(d, hf, facts) for d in hf.decisions]


def _installed(facts: Facts, request: str) -> Optional[bool]:
    family = FAMILY_OF.get(request)
    found = facts.family(family) if family is not None else None
    return found.installed if found is not None else None


def _evidence(d: AttnDecision, hf: TransformersAttention) -> dict[str, object]:
    return {"transformers": hf.version, "requested": d.requested, "resolved": d.resolved,
            "error": d.error, "logged": d.warnings, "refused_connections": d.network,
            "hub_kernels": d.hub_kernels}


def _finding(d: AttnDecision, hf: TransformersAttention, facts: Facts) -> Finding:
    head = f'transformers {hf.version}, attn_implementation="{d.requested}":'
    evidence = _evidence(d, hf)
    kernel = d.hub_kernels[0] if d.hub_kernels else None
    if d.resolved is not None and d.resolved == d.requested:
        if "/" in d.requested:  # a Hub kernel found in the local cache
            return _make(Severity.WARNING, f"{head} runs the Hub kernel (from the local cache); "
                         f"it {HUB}", d, evidence)
        return _make(Severity.INFO, f"{head} runs {d.resolved}", d, evidence)
    if d.resolved is not None:
        hub = f"; it {HUB}" if "/" in d.resolved else ""
        return _make(Severity.WARNING, f"{head} falls back to {d.resolved}{hub}", d, evidence)
    error = (d.error or ["unknown error"])[0]
    if kernel is not None:
        asked = ("loads the Hub kernel: it" if kernel == d.requested else
                 f"falls back to the Hub kernel {kernel} (the flash-attention package it "
                 f"checks for is missing) and")
        return _make(Severity.WARNING, f"{head} {asked} {HUB}. fadoctor refused that download, "
                     f"so whether the kernel works here is unknown; when it cannot be had, "
                     f"transformers fails with: {error}", d, evidence)
    unsupported = error.startswith("ValueError") and "is not supported" in error
    installed = _installed(facts, d.requested)
    if d.requested == "sdpa" or (installed and not unsupported):
        return _make(Severity.ERROR, f"{head} fails with: {error}", d, evidence)
    return _make(Severity.INFO, f"{head} fails with: {error}", d, evidence)


def _make(severity: Severity, message: str, d: AttnDecision, evidence: dict[str, object]
          ) -> Finding:
    category = Category.INFO if severity == Severity.INFO else Category.NOT_INSTALLED
    remedies: List[Remedy] = []
    if severity != Severity.INFO:
        remedies = [Remedy(summary='Load the model with attn_implementation="sdpa" (or install '
                           'the flash-attention package transformers checks for: `fadoctor fix '
                           '--print-pins`); a Hub kernel can be fetched ahead of time with the '
                           'kernels library, so that the training job needs no network.')]
        if d.requested == "sdpa":
            remedies = [Remedy(summary="transformers refuses SDPA here: see its message; "
                               'attn_implementation="eager" always works.')]
        category = Category.NOT_INSTALLED if d.resolved is None else Category.VERSION_CONFLICT
    return Finding(severity=severity, category=category, message=message, subject=d.requested,
                   evidence=evidence, remedies=remedies)
