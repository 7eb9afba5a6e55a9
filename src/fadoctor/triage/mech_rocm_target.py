"""ROCm torch itself without code for the GPU: "hipErrorNoBinaryForGpu: Unable to find code
object for all current devices!" or "HIP error: invalid device function" with no flash-attention
in the report (pure). A ROCm build carries code objects for the gfx targets it was compiled for
(PYTORCH_ROCM_ARCH); an APU or a smaller RDNA part outside that list has none. The ROCm runtime
can be told to treat the GPU as another target with HSA_OVERRIDE_GFX_VERSION (ROCm's
environment-variable reference): that works between targets of one ISA generation (RDNA2's
gfx103x as gfx1030, RDNA3's gfx110x as gfx1100), and is unsupported on Windows."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows
from fadoctor.triage.mech_ggml import hsa_version
from fadoctor.triage.signal import NAMED, Signal, dedupe

_GFX = re.compile(r"\b(gfx(?:9[0-9a-f]{2}|1[0-2][0-9a-f]{2}))\b", re.I)
# a generation's base target, which PyTorch's ROCm builds carry (gfx1151/1150 are RDNA3.5, sold
# alongside RDNA3 and run its code with the override)
_SIBLING: Tuple[Tuple[str, str], ...] = (("gfx103", "gfx1030"), ("gfx110", "gfx1100"),
                                         ("gfx115", "gfx1100"))
_FLASH = ("flash_attn", "flash-attn", "flash attention", "flashattention", "composable_kernel",
          "ck_tile")


def sibling(gfx: str) -> Optional[str]:
    return next((base for prefix, base in _SIBLING if gfx.lower().startswith(prefix)
                 and gfx.lower() != base), None)


def torch_target(ctx: Context, index: int) -> Optional[Signal]:
    """The signal, or None where flash-attention is in the report (its CK backend's archs are
    the likelier cause there)."""
    if ctx.text.containing(_FLASH):
        return None
    named = next((m.group(1).lower() for _, m in ctx.find(_GFX, ("gfx",))), None) \
        or ctx.seen.get("amd_arch")
    quotes = dedupe([ctx.quote(index), *ctx.quotes("amd_arch", "rocm", "torch", "gpu")])
    fixes: List[Remedy] = []
    base = sibling(str(named)) if named else None
    if on_windows(ctx):
        fixes.append(Remedy(summary="On Windows HSA_OVERRIDE_GFX_VERSION is not supported: "
                            "install a ROCm torch built for this GPU's gfx target (AMD's "
                            "per-family builds), or use a supported GPU."))
    elif base is not None:
        fixes.append(Remedy(summary=f"{named} runs {base}'s code (one ISA generation), which "
                            f"PyTorch's ROCm builds carry: have the ROCm runtime treat the GPU "
                            f"as {base}.",
                            commands=[f"export HSA_OVERRIDE_GFX_VERSION={hsa_version(base)}"]))
    else:
        fixes.append(Remedy(summary="Find the GPU's gfx target (rocminfo | grep gfx) and have "
                            "the ROCm runtime treat it as its generation's base target, which "
                            "PyTorch's ROCm builds carry: RDNA2 (gfx103x) "
                            "HSA_OVERRIDE_GFX_VERSION=10.3.0, RDNA3/3.5 (gfx110x, gfx115x) "
                            "11.0.0; the override works only within one generation.",
                            commands=["rocminfo | grep gfx"]))
    fixes.append(Remedy(summary="Or install a torch whose ROCm targets include this GPU (AMD's "
                        "per-gfx-family builds), or build PyTorch for it with "
                        f"PYTORCH_ROCM_ARCH={named or 'its gfx target'}; a supported GPU needs "
                        "neither."))
    return Signal("rocm_torch_target", Category.ROCM,
                  f"this ROCm torch has no code object for the GPU ({named or 'its gfx target'}): "
                  "its build's target list leaves it out", quotes, NAMED, fixes,
                  needs=[] if named else [("the GPU's gfx target", "rocminfo | grep gfx")])


# rocBLAS / hipBLASLt without kernels for the GPU: "rocBLAS error: Cannot read .../library/
# TensileLibrary.dat: ... for GPU arch : gfx900", "hipBLASLt error: No Tensile library for gfx..."
# (their Tensile libraries are built per gfx target, and a torch's bundled ROCm carries its list)
_TENSILE = re.compile(r"(?:rocBLAS|hipBLASLt) error:[^\n]{0,300}?(?:for GPU arch\s*:\s*|for )"
                      r"(gfx[0-9a-f]{3,5})|Cannot read [^\n]{0,200}TensileLibrary[^\n]{0,80}?"
                      r"(gfx[0-9a-f]{3,5})", re.I)


def tensile(ctx: Context) -> List[Signal]:
    hit = ctx.first(_TENSILE, ("rocblas", "hipblaslt", "tensilelibrary"))
    if hit is None:
        return []
    gfx = (hit[1].group(1) or hit[1].group(2)).lower()
    fixes: List[Remedy] = []
    base = sibling(gfx)
    if base is not None and not on_windows(ctx):
        fixes.append(Remedy(summary=f"{gfx} runs {base}'s code (one ISA generation), which the "
                            f"bundled libraries carry: have the ROCm runtime treat it as {base}.",
                            commands=[f"export HSA_OVERRIDE_GFX_VERSION={hsa_version(base)}"]))
    fixes.append(Remedy(summary=f"Install a torch whose bundled ROCm libraries include {gfx}: "
                        "an earlier ROCm build of torch that still listed it, or AMD's "
                        f"per-gfx-family builds (TheRock) for {gfx}; or build PyTorch for it "
                        f"with PYTORCH_ROCM_ARCH={gfx}."))
    return [Signal("rocm_tensile_target", Category.ROCM,
                   f"the ROCm math libraries bundled with this torch (rocBLAS/hipBLASLt) have no "
                   f"kernels for {gfx}: their build's target list leaves it out",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch", "rocm")]), NAMED, fixes)]


# AMD's LLVM back end refusing a Triton kernel whose stack frame outgrows the target's limit
# ("triton_flash_attention.py:211:0: stack frame size (164332) exceeds limit (131056) in function
# 'attn_fwd...'"): the kernel's tiles spill on this gfx target (an older one, such as gfx906),
# so the Triton attention path cannot run there. vLLM's ROCm build chooses that path unless
# VLLM_USE_TRITON_FLASH_ATTN is 0 (vllm/envs.py: "flag to control if vllm should use triton
# flash attention").
_STACK = re.compile(r"stack frame size \((\d+)\) exceeds limit \((\d+)\) in function '(\w{1,40})")


def triton_stack_frame(ctx: Context) -> List[Signal]:
    hit = ctx.first(_STACK, ("stack frame size",))
    if hit is None or not ctx.text.containing(("triton",)) or not (
            ctx.amd or ctx.text.containing(("rocm", "hip", "gfx", "amdgpu"))):
        return []  # a Triton kernel on an AMD GPU (clang's -Wframe-larger-than is a warning)
    fixes = [Remedy(summary="Turn off vLLM's Triton flash-attention on ROCm, so it takes its "
                    "other attention path on this GPU.",
                    commands=["export VLLM_USE_TRITON_FLASH_ATTN=0"])] \
        if ctx.text.containing(("vllm",)) else []
    fixes.append(Remedy(summary="Or use an attention that is not this Triton kernel on this "
                        "GPU: the framework's non-Triton backend, or PyTorch SDPA."))
    return [Signal("rocm_stack_frame", Category.ROCM,
                   f"the Triton attention kernel ({hit[1].group(3)}) needs a {hit[1].group(1)}-"
                   f"byte stack frame, over this GPU's limit ({hit[1].group(2)}): its tiles do not "
                   "fit this gfx target, so the Triton attention path cannot run on it",
                   [ctx.quote(hit[0])], NAMED, fixes)]
