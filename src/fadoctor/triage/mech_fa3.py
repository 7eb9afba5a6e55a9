"""A FlashAttention-3 kernel (flash-attention's hopper/ directory, built into flash_attn_3,
xformers or a Hub kernel) on a GPU it has no kernels for: a CUDA error raised from hopper/'s
sources, or a report saying a Hopper-only FA3 fails on another GPU (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage import switches
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, NAMED, Signal, dedupe

# hopper/setup.py at v2.7.3 (lines 63, 147-149) and later: sm_90a SASS, plus sm_80 SASS unless
# FLASH_ATTENTION_DISABLE_SM80=TRUE; no PTX, so no Blackwell (sm_100, sm_120) kernel at all.
FA3_ARCHS = "Dao-AILab/flash-attention@v2.7.3:hopper/setup.py:63,147-149"
# xformers' FA3 operator: v0.0.31 lowered its minimum to (8, 0) with no maximum (flash3.py:599),
# so Blackwell GPUs were dispatched to it; v0.0.33 caps it at (9, 0) (flash3.py:603) and
# requires torch >= 2.9 (requirements.txt).
XFORMERS = ("facebookresearch/xformers@v0.0.31:xformers/ops/fmha/flash3.py:599; "
            "@v0.0.33:xformers/ops/fmha/flash3.py:603, requirements.txt")
_LAUNCH = re.compile(r"hopper[/\\]+(?:flash_\w{1,40}|epilogue\w{0,20}|mainloop\w{0,30})\.\w{1,4}"
                     r"(?::\d+)?\)?:? *(invalid argument|no kernel image|invalid device function|"
                     r"an illegal)")
_HOPPER_ONLY = re.compile(r"Hopper[- ]only|only (?:supports?|for|runs? on|works? on) "
                          r"(?:the )?(?:Hopper|H100|sm_?90)|requires? (?:a )?Hopper", re.I)
# hopper/setup.py: the package flash_attn_3 (its extension flash_attn_3._C, earlier
# flash_attn_3_cuda) and the top-level module flash_attn_interface (py_modules, v2.8.3:636).
BUILD_FA3 = ("git clone --recursive https://github.com/Dao-AILab/flash-attention && cd "
             "flash-attention/hopper && MAX_JOBS=4 python setup.py install")
_NOT_THERE = re.compile(r"No module named ['\"](flash_attn_interface|flash_attn_3(?:_cuda)?)\b")


def launch(ctx: Context) -> List[Signal]:
    """A CUDA error at a launch in hopper/'s sources on a GPU other than Hopper."""
    hit = ctx.first(_LAUNCH, ("hopper",))
    if hit is None:
        return []
    index, _ = hit
    cc = ctx.gpu_cc
    if cc is not None and cc.major == 9:
        return []  # Hopper runs these kernels: the error has another cause
    quotes = dedupe([ctx.quote(index), *([ctx.gpu[2]] if ctx.gpu else [])])
    return [Signal("fa3_arch", Category.GPU_UNSUPPORTED,
                   f"a FlashAttention-3 kernel (flash-attention's hopper/) failed to launch on "
                   f"{_gpu(ctx)}: FA3 is built for sm_90a and, unless disabled, sm_80 only",
                   quotes, NAMED, _remedies(ctx, cc, index),
                   details={"source": f"{FA3_ARCHS}; {XFORMERS}" if _xformers(ctx, index)
                            else FA3_ARCHS},
                   needs=[] if cc else [("the GPU model", r.REVEAL_GPU)])]


_FA3_WORDS = ("fa3", "flash-attention-3", "flash_attn_3", "flash-attn3", "flash_attn3",
              "flash attention 3", "flashattention-3", "hopper/", "flash_attn_interface")


def hopper_only(ctx: Context) -> List[Signal]:
    """The report says the FA3 it runs is Hopper-only, and names another GPU; or it runs FA3 on
    a Blackwell GPU, which no FA3 build has kernels for."""
    cc = ctx.gpu_cc
    # a version listing that says FA3 is "not installed" does not run it
    fa3 = [i for i in ctx.text.containing(_FA3_WORDS) if "not installed" not in ctx.low(i)]
    if cc is None or cc.major == 9 or not fa3:
        return []
    said = ctx.first(_HOPPER_ONLY, ("hopper", "h100", "sm90", "sm_90"))
    if said is None and cc.major < 10:
        return []
    index = said[0] if said is not None else fa3[0]
    message = (f"the FlashAttention-3 build used is Hopper-only, and {_gpu(ctx)} is not a Hopper "
               "GPU" if said is not None else f"FlashAttention-3 is run on {_gpu(ctx)}: no FA3 "
               "build has kernels for Blackwell (sm_80 and sm_90a only)")
    return [Signal("fa3_arch", Category.GPU_UNSUPPORTED, message,
                   dedupe([ctx.quote(index), ctx.gpu[2]]) if ctx.gpu else [ctx.quote(index)],
                   HINTED, _remedies(ctx, cc, index), details={"source": FA3_ARCHS})]


def not_installed(ctx: Context) -> List[Signal]:
    """FlashAttention-3's own modules are missing: FA3 is a separate install, not part of the
    flash-attn (2.x) wheel."""
    hit = ctx.first(_NOT_THERE, ("no module named",))
    if hit is None:
        return []
    index, found = hit
    cc = ctx.gpu_cc
    fixes: List[Remedy] = []
    if cc is not None and cc.major not in (8, 9):
        fixes.append(Remedy(summary=f"FlashAttention-3 has no kernels for {_gpu(ctx)} (sm_80 "
                            "and sm_90a builds only): use flash-attn 2.x, or PyTorch SDPA.",
                            commands=['pip install "flash-attn>=2.8.0" --no-build-isolation']))
    fixes += [Remedy(summary="FlashAttention-3 is not part of the flash-attn wheel: build it from "
                     "flash-attention's hopper/ directory (README), which installs the "
                     "flash_attn_3 package and the flash_attn_interface module.",
                     commands=[BUILD_FA3]),
              Remedy(summary="Or install a prebuilt flash_attn_3 wheel for this torch and CUDA, "
                     "if one exists (fadoctor fix --print-pins lists the sources it knows).",
                     commands=["fadoctor fix --print-pins"]),
              r.sdpa("Or run without it: PyTorch SDPA needs nothing installed.")]
    return [Signal("fa3_missing", Category.NOT_INSTALLED,
                   f"FlashAttention-3 is not installed: Python has no {found.group(1)}", dedupe(
                       [ctx.quote(index), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED, fixes,
                   details={"source": "Dao-AILab/flash-attention@v2.8.3:hopper/setup.py:36,636"})]


def _gpu(ctx: Context) -> str:
    if ctx.gpu is None:
        return "this GPU"
    name, cc, _ = ctx.gpu
    return f"{name} (sm_{cc.major}{cc.minor})" if cc is not None else name


def _xformers(ctx: Context, index: int) -> bool:
    """The FA3 that failed is xformers' bundled one (its path, or the lines just above)."""
    return "xformers" in " ".join(ctx.text.lower_lines[max(index - 3, 0):index + 1])


def _remedies(ctx: Context, cc: Optional[Version], index: int) -> List[Remedy]:
    found: List[Remedy] = []
    if _xformers(ctx, index):
        found += [Remedy(summary="xformers 0.0.31 to 0.0.32.post2 send any GPU of sm_80 or newer "
                         "to their bundled FA3 (no upper bound); 0.0.33 stops at sm_90. Upgrade "
                         "xformers to 0.0.33 or later (it requires torch 2.9 or later).",
                         commands=['pip install --upgrade "xformers>=0.0.33"']),
                  Remedy(summary="Or uninstall xformers, so the framework falls back to PyTorch "
                         "SDPA.", commands=["pip uninstall -y xformers"])]
    if cc is not None and cc.major == 8:
        found.append(Remedy(
            summary="FA3 built from flash-attention's hopper/ at v2.7.3 or later carries sm_80 "
                    "kernels, which run on Ampere and Ada, unless FLASH_ATTENTION_DISABLE_SM80 "
                    "was set; a Hopper-only build (a Hub kernel built for sm_90 only) does not. "
                    "Or use flash-attn 2.x there.",
            commands=['pip install "flash-attn>=2,<3" --no-build-isolation']))
    elif cc is not None and cc >= Version("10.0"):
        found.append(Remedy(
            summary="No FA3 build has Blackwell kernels: use flash-attn 2.8.0 or later (sm_100 "
                    "and sm_120 kernels), or flash-attn-4 on sm_100/sm_103 data-center GPUs.",
            commands=['pip install "flash-attn>=2.8.0" --no-build-isolation']))
    found.append(r.sdpa("Or fall back to PyTorch SDPA, which runs on any GPU."))
    return found


# A framework feature only its FlashAttention-3 path has (vLLM's attention sinks: "Sinks are only
# supported in FlashAttention 3"), on a GPU FA3 has no kernels for (FA3_ARCHS: sm_90a, and sm_80
# unless disabled): the framework must take another backend for that model on this GPU.
_FA3_ONLY = re.compile(r"(?:only|just) (?:be )?supported (?:in|with|by|on|for) (?:the )?"
                       r"(?:(?:FlashAttention|Flash Attention|FA)[ -]?(?:v)?3|SM ?_?90a?\b|Hopper)",
                       re.I)


def fa3_only_feature(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FA3_ONLY, ("flashattention 3", "flashattention-3", "flashattention3",
                                "flash attention 3", "fa3", "fa 3", "fa-3", "fav3", "fa v3",
                                "sm90", "sm 90", "sm_90", "hopper"))
    if hit is None:
        return []
    cc = ctx.gpu_cc
    if cc is not None and cc.major == 9:
        return []
    index, _ = hit
    fixes = r.keep([switches.remedy(ctx, "Take a backend that has the feature on this GPU:"),
                    Remedy(summary="Or run it on a Hopper GPU (H100, H200, H20), or on a release "
                           "of the framework that adds the feature for this GPU's architecture."),
                    r.sdpa("Or, outside a serving framework:")])
    hopper_named = re.search(r"SM ?_?90|Hopper", hit[1].group(0), re.I) is not None
    what = ("the feature this model needs has kernels for Hopper (SM90) only" if hopper_named
            else "the feature this model needs runs only on the FlashAttention-3 path")
    return [Signal("fa3_arch", Category.GPU_UNSUPPORTED,
                   f"{what}, and {_gpu(ctx)} is not Hopper (FA3-class kernels are built for "
                   "sm_90a): use a backend or release that has the feature for this GPU",
                   dedupe([ctx.quote(index), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED, fixes,
                   details={"source": FA3_ARCHS},
                   needs=[] if cc else [("the GPU model", r.REVEAL_GPU)])]


# FA3's fp8 is Hopper's: "FlashAttention on Ampere/Ada cards only supports fp16 and bf16 data
# type" (Dao-AILab/flash-attention@v2.8.3:hopper/flash_api.cpp:682-684, when major < 9). A report
# about FA3 in fp8 on an Ampere or Ada GPU (a question included) gets that answer.
_FP8 = re.compile(r"\bfp8\b|float8|\be4m3\b", re.I)


def fp8_off_hopper(ctx: Context) -> List[Signal]:
    cc = ctx.gpu_cc
    if cc is None or cc.major != 8 or ctx.gpu is None:
        return []
    fa3 = ctx.text.containing(_FA3_WORDS)
    fp8 = ctx.first(_FP8, ("fp8", "float8", "e4m3")) if fa3 else None
    if fp8 is None:
        return []
    return [Signal("fa3_arch", Category.GPU_UNSUPPORTED,
                   f"FlashAttention-3's fp8 kernels are Hopper's (sm_90a): on {_gpu(ctx)} FA3 "
                   "takes fp16 and bf16 only",
                   dedupe(sorted([ctx.quote(fp8[0]), ctx.gpu[2]], key=lambda q: q.line)), HINTED,
                   [Remedy(summary="fp8 attention with FA3 needs a Hopper GPU (H100, H200, H20); "
                           "on Ampere and Ada run FA3's sm_80 kernels or flash-attn 2 in fp16 or "
                           "bf16.", commands=['pip install "flash-attn>=2,<3" --no-build-isolation']),
                    r.sdpa("Or PyTorch SDPA in fp16 or bf16.")],
                   details={"source": "Dao-AILab/flash-attention@v2.8.3:hopper/flash_api.cpp:682"})]
