"""A report about flash-attention on a GPU older than Ampere (Volta, Turing, Pascal) with no
error that explains more, or only pip's summary of a failed flash-attn build: the GPU itself is
the cause, as FlashAttention-2 needs compute capability 8.0 (the matrix's FA2 floor, from
flash_api.cpp's arch check at each tag) (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.facts.model import Family
from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage import switches
from fadoctor.triage.context import Context
from fadoctor.triage.mech_gpu import gpu_words
from fadoctor.triage.signal import HINTED, WRAPPED, Signal, dedupe

_FA2_WORDS = ("flash-attention 2", "flash attention 2", "flashattention-2", "flashattention 2",
              "flash_attention_2", "flash-attention-2", "flash-attn", "flash_attn", "flashattention",
              "flash attention", "flash-attention", "fa2", "xformers does not support")


def pre_ampere(ctx: Context) -> List[Signal]:
    """A report about flash-attention that names a GPU older than Ampere and no error that
    explains more: the GPU itself is the cause (the weakest finding: any message outranks it).
    With a flash-attn version stated, the checks (FAD112) say it from the facts."""
    cc, floor = ctx.gpu_cc, ctx.matrix.family_support(Family.FA2).min_cc
    if ctx.gpu is None and not ctx.amd:
        return _older_than_ampere_in_prose(ctx, floor)
    if cc is None or cc >= floor or ctx.amd or ctx.gpu is None or ctx.fa2 is not None:
        return []
    # an error no mechanism explains makes the GPU a guess, unless the error is the fallback's
    # (vLLM runs XFormers where FlashAttention needs Ampere: "Cannot use FlashAttention-2
    # backend for Volta and Turing GPUs", vllm/attention/selector.py)
    errors = [raised for raised in ctx.seen.raised if raised.kind not in ("warning", "log")
              and "xformers" not in raised.message.lower()]
    # a flash-attn build that failed with only pip's summary shown: whatever broke it, the
    # build would give kernels this GPU cannot run
    built = bool(errors) and all(_BUILD_SUMMARY.search(raised.message) for raised in errors)
    # or only the framework's "flash-attn is not installed / not available": installing it would
    # not help, as no FlashAttention-2 build runs on this GPU
    missing = all(_FA_MISSING.search(raised.message) for raised in errors) if errors else \
        ctx.first(_FA_MISSING, ("not installed", "flash_attn", "not available", "toggled on")) \
        is not None
    if errors and not built and not missing:
        return []
    mention = ctx.text.containing(_FA2_WORDS)
    if not mention:
        return []
    quotes = dedupe(sorted([ctx.gpu[2], ctx.quote(mention[0])], key=lambda q: q.line))
    remedies = r.keep([switches.remedy(ctx, "Turn flash-attention off in the framework:"),
                       r.sdpa(f"FlashAttention-2 needs an Ampere or newer GPU (compute capability "
                              f"{floor}); features that need it (a framework's soft-capping, "
                              "sliding window) need such a GPU too. PyTorch SDPA runs on this "
                              "one.")])
    if not missing:  # nothing to uninstall where it is not installed
        remedies.append(_UNINSTALL)
    below_70 = _below_volta(ctx, cc)
    if below_70 is not None:
        remedies.insert(0, below_70)
    if cc < Version("8.0"):
        remedies.append(Remedy(summary="On Volta and Turing, run the model in float16 (these "
                               "GPUs have no bfloat16 units), e.g. torch_dtype=torch.float16."))
    return [Signal("pre_ampere", Category.GPU_UNSUPPORTED,
                   f"{gpu_words(ctx)} is older than Ampere: FlashAttention-2 needs compute "
                   f"capability {floor} or newer"
                   + ("; the build that failed would not run here either" if built else "")
                   + ("; installing flash-attn 2 would not help" if missing else ""),
                   quotes, WRAPPED + 1 if built or missing else HINTED, remedies)]


# vLLM rejects a GPU below Volta outright: its installation docs ("GPU: compute capability 7.0 or
# higher (e.g., V100, T4, RTX20xx, A100, L4, H100, etc.)" from v0.3 to v0.14; "7.5 or higher" at
# v0.21.0, docs/getting_started/installation/gpu.cuda.inc.md). unsloth's README also says "Minimum
# CUDA Capability 7.0", but "GTX 1070, 1080 works, but is slow": only its vLLM path needs 7.0.


def _below_volta(ctx: Context, cc: Version) -> Remedy | None:
    if cc >= Version("7.0") or not ("vllm" in ctx.seen.packages or ctx.text.containing(("vllm",))):
        return None
    unsloth = "unsloth" in ctx.seen.packages or bool(ctx.text.containing(("unsloth",)))
    return Remedy(summary=f"vLLM's releases are built for GPUs of compute capability 7.0 or newer "
                  f"(its docs: V100, T4, RTX 20xx and later); {gpu_words(ctx)} is below it, so its "
                  "prebuilt wheels do not run here: use a newer GPU (a free Colab T4 qualifies), "
                  "or build vLLM from source for this arch (unsupported; reported to work on "
                  "Pascal)"
                  + (", or train without vLLM (unsloth without fast_inference=True: its README "
                     "says GTX 1070/1080 work, slowly)." if unsloth else "."))


_FA_MISSING = re.compile(r"flash[ _-]?attn\w*'? (?:seems to be )?not installed|no module named "
                         r"'?flash_attn|flash[ _-]?attention\w* is not available|toggled on, but "
                         r"it cannot be used", re.I)
_BUILD_SUMMARY = re.compile(r"failed building wheel for flash[-_]attn|failed to build flash[-_]attn|"
                            r"subprocess-exited-with-error|metadata-generation-failed", re.I)
# frameworks that take flash-attn whenever it imports (transformers' auto choice, unsloth,
# exllamav2...) fall back once it is gone
_UNINSTALL = Remedy(summary="Or uninstall flash-attn: frameworks that use it whenever it is "
                    "installed fall back to another attention without it.",
                    commands=["pip uninstall -y flash-attn"])
_OLDER = re.compile(r"(?:GPUs?|cards?)\s+(?:that are\s+)?older than Ampere|pre-?Ampere\s+"
                    r"(?:GPUs?|cards?|hardware)", re.I)


def _older_than_ampere_in_prose(ctx: Context, floor: Version) -> List[Signal]:
    """No GPU named, but the report says it runs on GPUs older than Ampere."""
    hit = ctx.first(_OLDER, ("older than ampere", "pre-ampere", "preampere", "pre ampere"))
    if hit is None or not ctx.text.containing(_FA2_WORDS):
        return []
    return [Signal("pre_ampere", Category.GPU_UNSUPPORTED,
                   f"the GPUs are older than Ampere: FlashAttention-2 needs compute capability "
                   f"{floor} or newer", [ctx.quote(hit[0])], HINTED,
                   r.keep([switches.remedy(ctx, "Turn flash-attention off in the framework:"),
                           r.sdpa("PyTorch SDPA runs on these GPUs."),
                           _UNINSTALL,
                           Remedy(summary="FlashAttention 1.x supports Turing (sm_75), with its "
                                  "own, older API.", commands=['pip install "flash-attn<2"'])]),
                   needs=[("the GPU model", r.REVEAL_GPU)])]
