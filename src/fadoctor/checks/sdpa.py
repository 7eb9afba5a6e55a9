"""Which PyTorch SDPA backends can stand in for flash-attention on this machine."""

from __future__ import annotations

from typing import Sequence

from fadoctor.checks.base import Outcome, Skip, info, unreported, version, why_unknown
from fadoctor.checks.system import gpus
from fadoctor.facts.model import Facts
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity

FAST = ("flash", "efficient", "cudnn")


def check_sdpa(facts: Facts, matrix: Matrix) -> Outcome:
    torch = facts.torch.data
    if torch is None:
        return why_unknown("torch", facts.torch)
    if torch.cuda_available is None:
        return unreported("torch.cuda.is_available()")
    if not torch.cuda_available:
        return Skip("needs a GPU visible to torch; SDPA on the CPU is no fallback for training")
    if not torch.sdpa:
        if torch.sdpa is None and torch.sdpa_error is None:
            return unreported("torch's SDPA backend report")
        return Skip(f"needs torch's SDPA backend report, which failed: {torch.sdpa_error}")
    usable = [b.name for b in torch.sdpa if b.usable and b.name in FAST]
    unknown = [b.name for b in torch.sdpa if b.usable is None and b.name in FAST]
    if not usable and unknown:
        return _predicted(facts, matrix, unknown)
    evidence = {b.name: {"usable": b.usable, "enabled": b.enabled, "reasons": b.reasons}
                for b in torch.sdpa}
    if usable:
        return [info(f"PyTorch SDPA can run bf16 training here with: {', '.join(usable)} "
                     "(math always)", **evidence)]
    reasons = "; ".join(r for b in torch.sdpa for r in b.reasons[:1] if b.name in FAST)
    return [Finding(
        severity=Severity.WARNING, category=Category.GPU_UNSUPPORTED,
        message="only SDPA's math backend can run here: it materialises the attention matrix "
                f"(quadratic memory) and is far slower. Reasons: {reasons}",
        evidence=evidence,
        remedies=[Remedy(summary="Check that the flash/efficient/cudnn SDPA switches are not "
                         "disabled in your code (torch.backends.cuda.enable_*_sdp).")])]


def _predicted(facts: Facts, matrix: Matrix, names: Sequence[str]) -> Outcome:
    """torch could not report eligibility (older than 2.2): predict from the matrix's ranges."""
    torch = facts.torch.data
    tv = version(torch.version if torch else None)
    devices = gpus(facts)
    if tv is None or not devices:
        return Skip("needs torch's SDPA report or a known GPU, and neither is available")
    cc = min(cc for _, cc in devices)
    fits = []
    for name in names:
        rng = matrix.sdpa_range(name, tv)
        if rng is not None and rng.min_cc <= cc <= rng.max_cc:
            fits.append(name)
    if fits:
        return [info(f"by fadoctor's matrix, torch {tv} SDPA supports sm_{cc.major}{cc.minor} "
                     f"with: {', '.join(fits)}")]
    return [Finding(severity=Severity.WARNING, category=Category.GPU_UNSUPPORTED,
                    message=f"by fadoctor's matrix, no fast SDPA backend of torch {tv} supports "
                    f"sm_{cc.major}{cc.minor}; only math remains",
                    evidence={"torch": str(tv), "compute_capability": str(cc)})]
