"""The `kernels` package found no build of a Hub kernel (kernels-community/flash-attn2, flash-attn3,
...) for this system: it prints "Cannot find a build variant for this system in REPO" and, per
build variant, why it was rejected (huggingface/kernels@v0.15.1: kernels/src/kernels/variants.py,
resolve_variants and variants_trace_str). The reason that rejects the most variants is the
cause (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

SOURCE = "huggingface/kernels@v0.15.1:kernels/src/kernels/variants.py (resolve_variants)"
_HEAD = re.compile(r"Cannot find a build variant for this system in ([\w.-]{1,80}/[\w.-]{1,80})")
_REASONS: Tuple[Tuple[str, Category, re.Pattern[str]], ...] = (
    ("torch", Category.TORCH_VERSION_MISMATCH,
     re.compile(r"Torch version \((\d+\.\d+)\) does not match environment Torch version "
                r"\(([\d.]+|None)\)")),
    ("stable", Category.TORCH_VERSION_MISMATCH,
     re.compile(r"Torch stable ABI version \(([\d.]+)\) is too new for environment Torch "
                r"version \(([\d.]+|None)\)")),
    ("abi", Category.CXX11_ABI_MISMATCH,
     re.compile(r"Torch CXX11 ABI \((\w+)\) does not match environment Torch CXX11 ABI "
                r"\((\w+)\)")),
    ("cuda", Category.CUDA_RUNTIME_MISMATCH,
     re.compile(r"CUDA version \(([\d.]+)\) is not compatible with system CUDA version "
                r"\(([\d.]+)\)")),
    ("platform", Category.PLATFORM_UNSUPPORTED,
     re.compile(r"(?:OS|CPU) \((\w+)\) does not match system (?:OS|CPU) \((\w+)\)")),
)


def no_variant(ctx: Context) -> List[Signal]:
    hit = ctx.first(_HEAD, ("cannot find a build variant",))
    if hit is None:
        return []
    start, head = hit
    repo = head.group(1)
    seen: Dict[str, List[Tuple[int, re.Match[str]]]] = {}
    for index in range(start + 1, min(start + 80, len(ctx.text.lines))):
        line = ctx.text.lines[index]
        for name, _, pattern in _REASONS:
            found = pattern.search(line)
            if found:
                seen.setdefault(name, []).append((index, found))
                break
    if not seen:
        return []
    # a torch-version rejection and a stable-ABI one say the same: no build for this torch
    counts = {n: len(v) + (len(seen.get("stable", [])) if n == "torch" else 0)
              for n, v in seen.items()}
    name = max(counts, key=lambda n: (counts[n], -[r[0] for r in _REASONS].index(n)))
    category = next(c for n, c, _ in _REASONS if n == name)
    lines = seen[name]
    quotes = dedupe([ctx.quote(start), *(ctx.quote(i) for i, _ in lines[:2])])
    message, fixes = _explain(name, repo, lines)
    return [Signal("hub_kernel", category,
                   f"the Hub kernel {repo} has no build for this system: {message}", quotes, NAMED,
                   fixes, details={"source": SOURCE})]


def _v(text: str) -> Optional[Version]:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _explain(name: str, repo: str, lines: List[Tuple[int, re.Match[str]]]
             ) -> Tuple[str, List[Remedy]]:
    built = sorted({v for _, m in lines if (v := _v(m.group(1))) is not None})
    have = lines[0][1].group(2)
    other = Remedy(summary="Or load the attention without the Hub kernel: the flash-attn package "
                   "built for this environment, or attn_implementation=\"sdpa\".")
    if name in ("torch", "stable"):
        listed = ", ".join(str(v) for v in built)
        newest = built[-1] if built else None
        fixes = [Remedy(summary=f"This revision of {repo} is built for torch {listed}; torch "
                        f"{have} is installed. Load a revision or version of the kernel built "
                        "for this torch, or on torch's stable ABI (such builds accept every "
                        "torch from their version on): get_kernel(repo, version=N) or "
                        "repo@revision, as the kernel's card lists.")]
        if newest is not None and (_v(have) is None or newest < (_v(have) or newest)):
            fixes.append(Remedy(summary=f"Or install torch {newest}, the newest it is built for.",
                                commands=[command("pip", "install", f"torch=={newest}.*")]))
        return f"its builds are for torch {listed}, and torch {have} is installed", [*fixes, other]
    if name == "abi":
        return (f"its builds use C++11 ABI {lines[0][1].group(1)}, and torch uses "
                f"{have}", [Remedy(summary="Install the torch build of the kernel's ABI, or a "
                                   "kernel revision built for this one."), other])
    if name == "cuda":
        listed = ", ".join(str(v) for v in built)
        return (f"its builds are for CUDA {listed}, and torch's CUDA is {have} (a build needs "
                "the same major and a minor no newer)",
                [Remedy(summary=f"Install a torch built for one of CUDA {listed} (same major, a "
                        "minor at least the kernel's), or a kernel revision built for this "
                        "CUDA."), other])
    return (f"it has builds for {lines[0][1].group(1)} only, and this system is {have}",
            [other])
