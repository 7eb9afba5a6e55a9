"""A package's own floor on another (not flash-attn, which mech_floor reads with the installed
release): "requires transformers>=4.52.0", "xformers>=0.0.28 is required", "please upgrade
peft to >=0.14", and transformers' require_version ("{requirement} is required for a normal
functioning of this module, but found {pkg}=={got_ver}." in transformers/utils/versions.py,
which wrappers such as LLaMA-Factory call on their dependencies). The version is the message's
own; the fix is that release or newer, or the requiring package's older release (pure).
LLaMA-Factory's check_dependencies skips these checks with DISABLE_VERSION_CHECK=1
(src/llamafactory/extras/misc.py)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import InvalidVersion, Version

from fadoctor.install.torch import extra_index_args
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, LOGGED, Signal, dedupe

_D = r"([A-Za-z][A-Za-z0-9_.-]{1,40}?)"
_V = r"(\d+\.\d+(?:\.\d+)?(?:\.post\d+|\.dev\d+|rc\d+)?)"
_FLOOR = re.compile(
    rf"(?:requires?d?|needs?)\s+`?{_D}\s*(?:>=|≥)\s*{_V}|"
    rf"`?{_D}\s*(?:>=|≥)\s*{_V}`?\s+(?:is\s+)?required|"
    rf"please\s+(?:install|upgrade)\s+(?:to\s+)?{_D}\s+(?:to\s+)?(?:>=|≥)\s*{_V}|"
    # diffusers' "`enable_model_cpu_offload` requires `accelerate v0.17.0` or higher."
    # (src/diffusers/pipelines/pipeline_utils.py), "requires X version 1.2 or later"
    rf"(?:requires?d?|needs?)\s+`?{_D}\s+(?:version\s+)?v?{_V}`?\s+or\s+(?:higher|later|newer|"
    rf"above)|"
    # a release named bare, torch only ("requires torch 2.7.0 nightly currently")
    rf"(?:requires?d?|needs?)\s+(?:at least\s+)?(torch|pytorch)\s+{_V}\b", re.I)
# transformers' require_version: "transformers>=4.41.2,<=4.46.1 is required for a normal
# functioning of this module, but found transformers==4.47.1."
_REQUIRE_VERSION = re.compile(r"([A-Za-z][\w.-]{1,40})([<>=!~][^ ]{1,60}) is required for a normal "
                              r"functioning of this module, but found \1==(\w[\w+-]*(?:\.\w[\w+-]*)*)")
_FOUND = re.compile(r"\(found ([\w.+-]+?)\)")
_NOT_PACKAGES = {"python", "cuda", "gcc", "nvcc", "driver", "glibc", "cmake", "g++", "msvc",
                 "flash-attn", "flash_attn", "flash-attention", "flashattention", "sm", "cc",
                 "compute", "capability", "version"}


def package_floor(ctx: Context) -> List[Signal]:
    pinned = ctx.first(_REQUIRE_VERSION, ("is required for a normal functioning",))
    if pinned is not None:
        dist, spec, found = pinned[1].group(1), pinned[1].group(2), pinned[1].group(3)
        return [_signal(ctx, pinned[0], dist, spec, found, LOGGED)]
    for index, hit in ctx.find(_FLOOR, ("require", "need", "please")):
        groups = [g for g in hit.groups() if g]
        dist, text = groups[0], groups[1]
        if dist.lower() in _NOT_PACKAGES or dist.lower().startswith("flash") or (
                dist.lower().startswith("torch") and dist.lower() != "torch"):
            continue
        try:
            need = Version(text)
        except InvalidVersion:
            continue
        if _met(ctx, index, dist, need):  # the floor holds: the message's other condition failed
            continue
        error = ctx.seen.raised and any(r.index == index for r in ctx.seen.raised)
        # "requires PyTorch >= 1.10 and a supported device": the floor is one of two conditions
        both = ctx.text.lines[index][hit.end():hit.end() + 6].lstrip().startswith("and ")
        dist = "torch" if dist.lower() == "pytorch" else dist
        return [_signal(ctx, index, dist, f">={text}", None,
                        LOGGED if error and not both else HINTED)]
    return []


def _signal(ctx: Context, index: int, dist: str, spec: str, found: str | None,
            strength: int) -> Signal:
    stated = ctx.package(dist.lower().replace("_", "-"))
    if found is None and dist.lower() == "torch":  # torchao's "(found 2.9.1+cu128)"
        said = _FOUND.search(ctx.text.lines[index]) or next(
            (m for _, m in ctx.find(_FOUND, ("(found",))), None)
        found = said.group(1) if said else None
    have = found or (stated.value if stated is not None else None)
    # a torch from PyTorch's index keeps its CUDA variant (its index beside the default one)
    index_args = extra_index_args(have) if dist.lower() == "torch" and have else []
    fixes = [Remedy(summary=f"Upgrade {dist} as the message asks ({dist}{spec}), or move "
                    f"the package that asks to a release written for {dist} "
                    f"{have or 'as installed'}.",
                    commands=[command("pip", "install", f"{dist}{spec}", *index_args)])]
    if ctx.has("llamafactory", "llama-factory", "llama_factory") is not None:
        fixes.append(Remedy(summary="LLaMA-Factory checks its dependency ranges itself and skips "
                            "the check with DISABLE_VERSION_CHECK=1 (when the newer release a "
                            "model needs is outside its range):",
                            commands=["export DISABLE_VERSION_CHECK=1"]))
    return Signal("package_floor", Category.VERSION_CONFLICT,
                  f"the code requires {dist}{spec}" + (f", and {have} is installed" if have
                                                       else ""),
                  dedupe([ctx.quote(index), *([stated.quote] if stated else [])]), strength,
                  fixes)


def _met(ctx: Context, index: int, dist: str, need: Version) -> bool:
    """The installed release is at or above the floor: the message's own "(found X)", else a
    version stated on another line (the floor's own number is not the installed one)."""
    name = dist.lower().replace("_", "-")
    found = _FOUND.search(ctx.text.lines[index])
    text = found.group(1) if found else None
    if text is None:
        said = ctx.package(name)
        if name in ("torch", "pytorch"):
            said = ctx.seen.values.get(o.TORCH) or said
        # a listing or a tool's output, not prose ("introduced in transformers v4.52.0")
        text = said.value if said is not None and said.weight > o.PROSE \
            and said.quote.line != ctx.quote(index).line else None
    try:
        return text is not None and Version(Version(text.split("+")[0]).base_version) >= need
    except InvalidVersion:
        return False


# A model needing a newer transformers than LLaMA-Factory's own range, told in prose ("InternLM3
# requires transformers>=4.47.1, and llamafactory 0.9.2.dev0 requires <=4.46.1"; Chinese 要求,
# "requires"): LLaMA-Factory's check_dependencies, not pip, refuses it.
_MODEL_NEEDS = re.compile(r"transformers?[^\n\d>]{0,20}>=?\s?v?(\d+\.\d+(?:\.\d+)?)", re.I)


def llamafactory_range(ctx: Context) -> List[Signal]:
    factory = ctx.has("llamafactory", "llama-factory", "llama_factory")
    if factory is None or ctx.first(_REQUIRE_VERSION, ("is required for a normal",)):
        return []
    hit = ctx.first(_MODEL_NEEDS, ("transformer",))
    if hit is None:
        return []
    need = hit[1].group(1)
    return [Signal("package_floor", Category.VERSION_CONFLICT,
                   f"the model needs transformers>={need}, above the range LLaMA-Factory's own "
                   "dependency check accepts", dedupe([ctx.quote(hit[0]), factory]), HINTED,
                   [Remedy(summary="LLaMA-Factory checks its dependency ranges itself "
                           "(check_dependencies) and skips the check with DISABLE_VERSION_CHECK=1: "
                           f"install transformers>={need} and set it; or upgrade LLaMA-Factory to "
                           "a release whose range includes it.",
                           commands=["export DISABLE_VERSION_CHECK=1",
                                     command("pip", "install", f"transformers>={need}")])])]
