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


# kernels before the variant trace (huggingface/kernels@v0.4.4:src/kernels/utils.py,
# install_kernel and load_kernel): FileNotFoundError("Kernel `REPO` at revision REV does not have
# build: VARIANT") and "Kernel at path `PATH` does not have build: VARIANT"; the variant is
# torch{major}{minor}-cxx{11|98}-{cu|rocm}{version}-{cpu arch}-{os}.
_NO_BUILD = re.compile(r"Kernel (?:`([\w.-]{1,80}/[\w.-]{1,80})`|at path `([^`]{1,400})`)"
                       r"[^\n]{0,80}? does not have build: (torch(\d)(\d{1,2})-cxx(\d\d)-"
                       r"(cu\d{3}|rocm\d{2,3})-(\w+?)-(linux|windows|darwin))")
_CACHED = re.compile(r"models--([\w.-]{1,80})--([\w.-]{1,80})")


def no_build(ctx: Context) -> List[Signal]:
    """The kernel repo has no build for this system's variant string: a CPU other than x86_64
    (most Hub kernels are built for x86_64 Linux only) or a torch the revision was not built for."""
    hit = ctx.first(_NO_BUILD, ("does not have build",))
    if hit is None:
        return []
    found = hit[1]
    cached = _CACHED.search(found.group(2) or "")
    repo = found.group(1) or (f"{cached.group(1)}/{cached.group(2)}" if cached else None)
    torch, toolkit, cpu = f"{found.group(4)}.{found.group(5)}", found.group(7), found.group(8)
    name = repo or "the kernel"
    listing = Remedy(summary=f"See which builds {name} has (its build/ folder: one per torch, "
                     "C++ ABI, CUDA, CPU and OS).",
                     commands=[f"python -c \"from huggingface_hub import list_repo_files; print("
                               f"sorted({{f.split('/')[1] for f in list_repo_files('{repo}') "
                               "if f.startswith('build/')}))\""] if repo else [])
    if cpu != "x86_64":
        return [Signal("hub_kernel", Category.PLATFORM_UNSUPPORTED,
                       f"the Hub kernel {name} has no build for {cpu} {found.group(9)} "
                       f"({found.group(3)}): its builds are for other CPUs",
                       [ctx.quote(hit[0])], NAMED,
                       [Remedy(summary=f"No {cpu} build is published: build the kernel from "
                               f"source on this machine and import it directly instead of through "
                               "get_kernel (for FlashAttention-3: flash-attention's hopper/ "
                               "directory, which installs flash_attn_interface)."),
                        listing],
                       details={"source": "huggingface/kernels@v0.4.4:src/kernels/utils.py"})]
    return [Signal("hub_kernel", Category.TORCH_VERSION_MISMATCH,
                   f"the Hub kernel {name} has no build for torch {torch} with {toolkit} "
                   f"({found.group(3)})", [ctx.quote(hit[0])], NAMED,
                   [listing,
                    Remedy(summary="Install the torch (and its CUDA) of one of those builds, or "
                           "load a revision of the kernel built for this torch; or use "
                           "attn_implementation=\"sdpa\".")],
                   details={"source": "huggingface/kernels@v0.4.4:src/kernels/utils.py"})]
