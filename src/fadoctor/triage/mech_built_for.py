"""A package's own report that its compiled extension was built for another torch (xFormers'
"xFormers was built for: PyTorch 2.0.1+cu118 with CUDA 1108 (you have 2.1.0+cu121)",
xformers/_cpp_lib.py): the release built for the installed torch, or the torch it was built for;
next to a CPU-only torch, the torch is what is wrong (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.install.torch import cuda_of_variant, torch_install
from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, NAMED, Signal, dedupe

_BUILT_FOR = re.compile(r"(?<!\w)(\w{1,100}) was built for:?\s*$|(?<!\w)(\w{1,100}) was built for:?"
                        r"\s*PyTorch ([\w.+]+)")
_YOU_HAVE = re.compile(r"PyTorch ([\w.+]+)\b.*\(you have ([\w.+]+)\)")


# xFormers' build line: "PyTorch 2.0.1 with CUDA 1108": the CUDA as digits, minor in the last two
_WITH_CUDA = re.compile(r"with CUDA (\d{1,2})(\d\d)\b")


def _variant(built: str, line: str) -> Optional[str]:
    """The torch build's variant (cu118, rocm6.1): its local version, or the CUDA its line names."""
    local = re.search(r"\+(cu\d+|rocm[\d.]+)$", built)
    cuda = _WITH_CUDA.search(line)
    return local.group(1) if local else f"cu{int(cuda.group(1))}{int(cuda.group(2))}" if cuda \
        else None


def built_for(ctx: Context) -> List[Signal]:
    """A package's own report that its extension was built for another torch (xFormers)."""
    hit = ctx.first(_YOU_HAVE, ("you have",))
    if hit is None:
        return []
    index, found = hit
    owner = next((m.group(1) or m.group(2) for _, m in
                  ((i, _BUILT_FOR.search(line)) for i, line in ctx.text.window(index, 2, 0))
                  if m), None)
    name = owner.lower() if owner else None
    if found.group(2).endswith("+cpu"):
        return _cpu_torch(ctx, index, found.group(1), name)
    built, have = found.group(1), found.group(2)
    remedies = r.rebuild_other(ctx, name, have)
    variant = _variant(built, ctx.text.lines[index])
    if variant:
        remedies.append(Remedy(summary=f"Or install the torch it was built for, torch {built} "
                               "(with the torchvision/torchaudio of that release).",
                               commands=[torch_install(built.split("+")[0], variant)]))
    quotes = [ctx.quote(index)]
    said = next((i for i in ctx.text.containing((built.split("+")[0],)) if i != index
                 and not _YOU_HAVE.search(ctx.text.lines[i])), None)
    if said is not None:  # the user installed that torch, and the process still runs another
        quotes.append(ctx.quote(said))
        remedies.insert(0, Remedy(
            summary=f"The report says torch {built.split('+')[0]} was installed, yet the process "
                    f"runs torch {have}: it runs another Python environment (an app's own venv, "
                    "such as the web UI's venv or a portable build's embedded Python). Install "
                    "into that environment: with its python -m pip, or the app's own option "
                    "(the A1111 web UI's --reinstall-torch)."))
    return [Signal("built_for", Category.TORCH_VERSION_MISMATCH,
                   f"{name or 'the package'}'s extensions were built for torch {built}, "
                   f"but torch {have} is installed: they cannot load",
                   dedupe(quotes), NAMED, remedies)]


def _cpu_torch(ctx: Context, index: int, built: str, owner: Optional[str]) -> List[Signal]:
    """A package built for a CUDA torch, next to a CPU-only torch: the torch is what is wrong."""
    variant = _variant(built, ctx.text.lines[index])
    fixes = [Remedy(summary=f"The installed torch is a CPU-only build; {owner or 'the package'} "
                    f"was built for torch {built}: install that CUDA build of torch.",
                    commands=[torch_install(built.split("+")[0], variant)])] \
        if variant else []
    return [Signal("built_for", Category.TORCH_CPU_ONLY,
                   f"the installed torch is a CPU-only build, while {owner or 'the package'} was "
                   f"built for torch {built}", [ctx.quote(index)], NAMED,
                   [*fixes, Remedy(summary="Install a CUDA build of torch from the PyTorch index "
                                   "for the CUDA your driver runs (`fadoctor fix` picks it).",
                                   commands=["fadoctor fix --print-pins"])])]


# The same said in prose: "the sgl-kernel wheel was built with PyTorch 2.5.1" and "does not work
# with PyTorch 2.7 (there are ABI issues)": a binary against libtorch's C++ API works with the
# torch it was built with only.
_BUILT_WITH = re.compile(r"(?:([A-Za-z][\w-]{1,40})\s+(?:wheels?|binar(?:y|ies)|extensions?)\s+"
                         r"(?:was|were|is|are)\s+)?(?:built|compiled)\s+(?:with|against|for)\s+"
                         r"(?:py)?torch\s*(\d+\.\d+(?:\.\d+)?)", re.I)
_FAILS_WITH = re.compile(r"(?:does not|doesn't|not|won't|cannot|can't|fails? to)\s+(?:work|run|"
                         r"load|import)\s+(?:with|on|under)\s+(?:py)?torch\s*(\d+\.\d+)", re.I)


def prose(ctx: Context) -> List[Signal]:
    built = ctx.first(_BUILT_WITH, ("built", "compiled"))
    fails = ctx.first(_FAILS_WITH, ("work", "run", "load", "import"))
    if built is None or fails is None or \
            built[1].group(2).startswith(fails[1].group(1)) or \
            any(raised.kind not in ("warning", "log") for raised in ctx.seen.raised):
        return []
    package, old, new = built[1].group(1) or "the extension", built[1].group(2), fails[1].group(1)
    return [Signal("built_for_prose", Category.TORCH_VERSION_MISMATCH,
                   f"{package} was built with torch {old} and fails with torch {new}: a binary "
                   "against libtorch's C++ API loads with the torch it was built with only (its "
                   "symbols and ABI change between releases)",
                   dedupe(sorted([ctx.quote(built[0]), ctx.quote(fails[0])],
                                 key=lambda q: q.line)), HINTED,
                   [Remedy(summary=f"Pin torch to {old}, the torch {package} was built with, "
                           f"beside it (the same torch version in the requirements), or rebuild "
                           f"{package} against torch {new} (a release built for it, or a build "
                           "with --no-build-isolation).")])]


# A torch pin with a CUDA variant that release never built ("torch==2.6.0+cu121": torch 2.6's
# builds are cu118, cu124, cu126), which pip cannot find on any index: the matrix's
# torch_releases lists each minor's CUDA variants (from PyTorch's wheel indexes).
_TORCH_PIN = re.compile(r"\btorch==(\d+\.\d+\.\d+)\+(cu\d{3})\b")
_NOT_FOUND = re.compile(r"no matching distribution|could not find a version|unavailable|"
                        r"fails? to install|failed to install|not (?:be )?found|doesn'?t exist|"
                        r"does not exist|no such", re.I)


def _nearest(asked: str, variants: List[str]) -> str:
    """The build of the same CUDA major nearest above the asked one, else the nearest at all."""
    cuda = cuda_of_variant(asked)
    same = sorted((cuda_of_variant(v), v) for v in variants if cuda_of_variant(v).major == cuda.major)
    above = [v for c, v in same if c >= cuda]
    if above:
        return above[0]
    if same:
        return same[-1][1]
    return min(variants, key=lambda v: abs(cuda_of_variant(v).major - cuda.major))


def _driver_note(ctx: Context, variant: str) -> str:
    needed = ctx.matrix.toolkit_driver(cuda_of_variant(variant))
    return (f" (CUDA {cuda_of_variant(variant)}: a driver of {needed.min_driver} or newer, as "
            "nvidia-smi shows it)" if needed is not None else "")


def missing_variant(ctx: Context) -> List[Signal]:
    for index, pin in ctx.find(_TORCH_PIN, ("torch==",)):
        version, variant = pin.group(1), pin.group(2)
        minor = ".".join(version.split(".")[:2])
        rel = next((t for t in ctx.matrix.torch_releases if t.minor == minor), None)
        if rel is None or variant in rel.cuda_variants:
            continue
        failed = ctx.first(_NOT_FOUND, ("no matching", "could not find", "unavailable", "install",
                                        "found", "exist", "no such"))
        if failed is None:
            return []
        best = _nearest(variant, rel.cuda_variants)
        return [Signal("missing_torch_variant", Category.WRONG_WHEEL,
                       f"torch {version} was never built for {variant}: its CUDA builds are "
                       f"{', '.join(rel.cuda_variants)}, so no index has torch=={version}+"
                       f"{variant}", dedupe([ctx.quote(index), ctx.quote(failed[0])]), NAMED,
                       [Remedy(summary=f"Install a build torch {version} has: {best}"
                               f"{_driver_note(ctx, best)}.",
                               commands=[torch_install(version, best)])])]
    return []
