"""A package's own refusal of the GPU's architecture, in words no catalog entry holds
(TensorRT-LLM's `Assertion failed: Unsupported architecture`, `FP8 FMHA cannot be enabled except
on Ada or Hopper or Blackwell Arch.`, a plugin's "not supported on this GPU"), beside a GPU the
report names; or an error stating the compute capability it needs above the GPU's (Transformer
Engine's `Device compute capability 8.9 or higher required for FP8 execution.`).
What the GPU is against what the message lists decides the remedy:
- a GPU older than Ampere: fused (flash-style) attention kernels start at sm_80, so the feature
  goes off or the job moves to a newer GPU;
- a GPU whose own architecture the message lists as supported: the release's check predates
  this model (an RTX 5090 is Blackwell, sm_120, not the sm_100 the check knows), so a newer
  release of the package;
- otherwise: the package's other attention path, or a GPU it supports.
Below every catalogued message (LOGGED, not NAMED): it reads words, not a known format string
(pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage import switches
from fadoctor.triage.context import ARCH_FAMILY_CC, Context
from fadoctor.triage.mech_symbols import package_in
from fadoctor.triage.signal import HINTED, LOGGED, NAMED, Signal, dedupe

_REFUSAL = re.compile(
    r"unsupported (?:gpu |cuda |compute |sm )?(?:arch(?:itecture)?|compute capability|device)\b"
    r"|\b(?:arch(?:itecture)?|gpu|device|sm_?\d{2,3}) (?:is |are )?not supported\b"
    r"|not supported (?:on|for|by) (?:this |the |your |current )?(?:gpu|arch(?:itecture)?|device|"
    r"hardware|sm)"
    r"|cannot be enabled except on"
    r"|(?:is )?only supported on (?:sm|gpus?|devices?|ampere|ada|hopper|blackwell|a100|h100)",
    re.I)
_NEEDLES = ("unsupported", "not supported", "except on", "only supported")
# the line is an error or an assert as printed (`RuntimeError:`, `[ERROR]`, `Assertion failed`),
# not prose about one
# an error as printed; or SageAttention's own check quoted without its ValueError (sageattention
# core.py: raise ValueError(f"Unsupported CUDA architecture: {arch}"), arch as "sm75")
_ERRORISH = re.compile(r"(?:Error|Exception|ERROR|FATAL|Fatal)\s*[:\]]|[Aa]ssert|abort|"
                       r"Unsupported CUDA architecture: sm\d{2,3}\b")
_SAGE = re.compile(r"Unsupported CUDA architecture: sm\d{2,3}\b")  # SageAttention's own words
# the option that turned the fused attention on, as the report passes it
_FUSED_FLAG = re.compile(r"--[\w-]{0,30}(?:fmha|flash[_-]?attn|flash[_-]?attention)[\w-]{0,20}", re.I)
# a person retelling what the program printed, just before the refusal's words
_TOLD = re.compile(r"\b(?:giving|gives|gave|getting|gets|got|throws?|threw|throwing|says|said|"
                   r"reports?|shows?|showing|complains?)\s+(?:(?:an?|the)\s+)?(?:error\s*:?\s*)?$",
                   re.I)
_FUSED_FLOOR = Version("8.0")
# vLLM's dtype check (vllm/worker/worker.py, _check_if_gpu_supports_dtype): "Bfloat16 is only
# supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-32GB GPU has
# compute capability 7.0. You can use float16 instead by explicitly setting the`dtype` flag in
# CLI, for example: --dtype=half." (its last line alone says it as well: vLLM raises it only there)
_BF16_FLOOR = re.compile(r"b(?:float)?16 is only supported on GPUs with compute capability|You can "
                         r"use float16 instead by explicitly setting the\s?`dtype` flag", re.I)
# A stated floor: "Device compute capability 8.9 or higher required for FP8 execution."
# (Transformer Engine's fp8 check), "requires compute capability >= 8.0", "sm_80 or newer".
_FLOOR = re.compile(
    # with the architecture named between ("GPU compute capability 8.0 (Ampere) or higher")
    r"compute capability (?:of )?(\d{1,2})\.(\d)\s*(?:\([A-Za-z ]{1,20}\)\s*)?"
    r"(?:or (?:higher|newer|above|greater|later)|\+)"
    # Transformer Engine before Ada's FP8: "Device compute capability 9.x required for FP8
    # execution." (a major alone: its .0)
    r"|compute capability (\d{1,2})\.(x) required"
    r"|(?:requires?|required|needs?)\s+(?:an? )?(?:GPU |device )?(?:with )?compute capability\s*"
    r"(?:>=|≥|of at least|at least)\s*(\d{1,2})\.(\d)"
    r"|\bsm_?(\d)(\d) or (?:higher|newer|above|later)"
    # the floor retold: "nothing under CUDA Compute 7.0 can be used", "below compute capability 7.0"
    r"|\b(?:under|below|less than|lower than|older than)\s+(?:CUDA\s+)?compute(?:\s+capability)?"
    r"\s+(\d{1,2})\.(\d)"
    # vLLM's "GPUs with compute capability below 7.0 are not supported."
    r"|compute capability (?:below|under|less than|lower than) (\d{1,2})\.(\d) (?:is|are) not "
    r"supported"
    # tiny-cuda-nn's "Turing Tensor Core operations must be run on a machine with compute
    # capability at least 75" (the number as its arch lists write it)
    r"|compute capability (?:of )?at least ([1-9])(\d)\b", re.I)


def refused(ctx: Context) -> List[Signal]:
    bf16 = ctx.first(_BF16_FLOOR, ("bfloat16", "bf16", "`dtype` flag"))
    below = _below_floor(ctx) if bf16 is not None and ctx.gpu_cc_exact is not None else []
    if below:  # a floor the GPU misses whatever the dtype ("below 7.0 are not supported")
        return below
    if bf16 is not None and not ctx.amd:  # a dtype the GPU lacks, not an architecture refused
        gpu = f"{ctx.gpu[0]} is {ctx.gpu_cc_exact}" if ctx.gpu and ctx.gpu_cc_exact else \
            "this GPU is below it"
        factory = ("; LLaMA-Factory: infer_dtype: float16" if ctx.has(
            "llamafactory", "llama-factory", "llama_factory") else "")
        return [Signal("bf16_floor", Category.DTYPE_UNSUPPORTED,
                       f"bfloat16 needs compute capability 8.0 (Ampere); {gpu}: it has no "
                       "bfloat16 units", dedupe([ctx.quote(bf16[0]), *([ctx.gpu[2]] if ctx.gpu
                                                                       else [])]), NAMED,
                       [Remedy(summary="Run in float16 instead: dtype=\"half\" (vLLM: --dtype "
                               f"half; transformers: torch_dtype=torch.float16{factory}).")])]
    if ctx.gpu is None and not ctx.amd:
        return _below_floor(ctx) or _below_detected(ctx)
    if ctx.gpu is None or ctx.amd:
        return []
    if ctx.gpu_cc_exact is None:  # a generation named ("Pascal"): only a floor above all of it
        return _below_floor(ctx) or _below_detected(ctx)
    below = _below_floor(ctx)
    if below:
        return below
    hit = next(((i, m) for i, m in ctx.find(_REFUSAL, _NEEDLES)
                if _ERRORISH.search(ctx.text.lines[i])), None)
    strength = LOGGED
    if hit is None:  # the refusal retold: "it is giving unsupported architecture"
        hit = next(((i, m) for i, m in ctx.find(_REFUSAL, _NEEDLES)
                    if _TOLD.search(ctx.text.lines[i][:m.start()])), None)
        strength = HINTED
    if hit is None:
        return []
    index = hit[0]
    line, low = ctx.text.lines[index], ctx.low(index)
    name, cc = ctx.gpu[0], ctx.gpu_cc_exact
    sm = f"sm_{cc.major}{cc.minor}"
    package = "sageattention" if _SAGE.search(line) else package_in(ctx, line)
    who = _display(package)
    quotes = dedupe([ctx.quote(index), ctx.gpu[2]])
    family = _family(cc)
    switch = switches.remedy(ctx, "Or turn flash-attention off in the framework:")
    if cc < _FUSED_FLOOR:
        message = (f"{who} refuses {name} ({sm}): its fused (flash-style) attention kernels need "
                   f"Ampere (sm80) or newer")
        flag = ctx.first(_FUSED_FLAG, ("fmha", "flash"))
        named = f" (here {flag[1].group(0)})" if flag else ""
        remedies = [Remedy(summary=f"Turn the fused attention feature off{named} so {who} takes "
                           f"its unfused path (slower), or run on an Ampere (sm80, A100) or newer "
                           "GPU."),
                    switch, r.sdpa("Or attention with PyTorch SDPA, which runs on this GPU:")]
        if package == "sageattention":  # no unfused path: the app's other attention (SDPA)
            remedies[0] = Remedy(summary="SageAttention has kernels for sm_80 and newer only (its "
                                 "sageattn dispatch): switch the app's attention mode from sage "
                                 "to sdpa (PyTorch attention), or run on an Ampere or newer GPU.")
    elif re.search(rf"\b{family}\b", low) or f"sm{cc.major}{cc.minor}" in low.replace("_", ""):
        message = (f"{who}'s check lists this GPU's own architecture ({family.capitalize()}) yet "
                   f"refuses {name} ({sm}): the release's check predates this model")
        remedies = [Remedy(summary=f"Upgrade {who}: a later release's architecture check admits "
                           f"{sm}; meanwhile turn the feature off.",
                           commands=_upgrade(package)),
                    switch]
    else:
        message = f"{who} has no kernels for {name} ({sm}) on this path: it refuses the architecture"
        remedies = [Remedy(summary=f"Take {who}'s other attention path (the feature off), a "
                           f"release that lists {sm}, or a GPU it supports."), switch]
    return [Signal("arch_refused", Category.GPU_UNSUPPORTED, message, quotes, strength,
                   r.keep(remedies))]


TE_FP8 = ("NVIDIA/TransformerEngine transformer_engine/pytorch/fp8.py (_check_fp8_support: "
          "\"Device compute capability 8.9 or higher required for FP8 execution.\", cuBLASLt "
          "12.1.3 and CUDA 12.1 on Ada)")


# the GPU's own capability, as the refusal states it beside its floor: "Your GPU's capability
# is 8.6." (ComfyUI-QwenVL's FP8 check), vLLM's "Your Tesla V100-SXM2-32GB GPU has compute
# capability 7.0."
_STATED_CC = re.compile(r"\b(?:your|this|the|current)\b[^.\n]{0,60}?\b(?:GPU|device)(?:'s)?\s+"
                        r"(?:has\s+)?(?:compute\s+)?capability(?:\s+is|:)?\s+(\d{1,2})\.(\d)\b",
                        re.I)


def _below_floor(ctx: Context) -> List[Signal]:
    """An error stating the compute capability it needs, above the named GPU's (or above every
    GPU of the generation named, or the one the message itself states), or the report retelling
    that floor."""
    gpu = ctx.gpu
    cc: Optional[Version] = None
    if gpu is not None:
        if gpu[1] is None:
            return []
        cc = ctx.gpu_cc_exact or _generation_top(gpu[1])
    for index, found in ctx.find(_FLOOR, ("capability", "sm", "compute")):
        line = ctx.text.lines[index]
        stated = _STATED_CC.search(line) if gpu is None else None
        if gpu is None:
            if stated is None:
                continue
            cc = Version(f"{stated.group(1)}.{stated.group(2)}")
        assert cc is not None
        digits = [g for g in found.groups() if g is not None]
        floor = Version(f"{digits[0]}.{digits[1].replace('x', '0')}")
        retold = found.group(0).split()[0].lower() in ("under", "below", "less", "lower", "older")
        # the title quoting the message ("punica LoRA kernels require compute capability >= 8.0")
        if cc >= floor or not (_ERRORISH.search(line) or retold or index == 0):
            continue
        fp8 = "fp8" in ctx.low(index)
        family = _family(floor).capitalize()
        instead = ("; on this GPU take the model's non-FP8 (bf16 or fp16) weights, or train in "
                   "bf16 with FP8 off (Transformer Engine: fp8_autocast enabled=False)." if fp8
                   else f", or turn the feature off in {_display(package_in(ctx, line))}.")
        quotes = dedupe([ctx.quote(index), *([gpu[2]] if gpu is not None else [])])
        name = gpu[0] if gpu is not None else "this GPU (as the message states)"
        if fp8 and cc == Version("8.9") and floor > cc and gpu is not None:  # Ada, before TE
            return [Signal("capability_floor", Category.GPU_UNSUPPORTED,
                           f"this Transformer Engine release allows FP8 on compute capability "
                           f"{floor}+ only; {gpu[0]} is Ada (8.9), which later releases admit",
                           quotes, LOGGED,
                           [Remedy(summary="Upgrade Transformer Engine: its later check admits "
                                   "compute capability 8.9 when cuBLASLt is 12.1.3 or newer and "
                                   "CUDA 12.1 or newer (a torch built with CUDA 12.1+).",
                                   commands=["pip install --upgrade transformer_engine[pytorch]"]),
                            Remedy(summary="Meanwhile train in bf16 without FP8 (fp8_autocast "
                                   "enabled=False).")],
                           details={"source": TE_FP8})]
        return [Signal("capability_floor", Category.GPU_UNSUPPORTED,
                       f"{'FP8' if fp8 else 'this feature'} needs compute capability {floor} or "
                       f"higher ({family} or newer); {name} is "
                       + (f"{cc}" if ctx.gpu_cc_exact or gpu is None else "older"),
                       quotes, LOGGED,
                       [Remedy(summary=f"Run it on a GPU of compute capability {floor} or newer "
                               f"({family} or newer){instead}")])]
    return []


# the package's own detection: "GPUs with compute capability below 8.0 are not supported."
# (thu-ml/SageAttention setup.py, raised when torch.cuda.get_device_capability() is below it;
# vLLM's setup.py had the 7.0 form)
_DETECTED = re.compile(r"GPUs? with compute capability (?:below|under|less than|lower than) "
                       r"(\d{1,2})\.(\d) (?:is|are) not supported")


def _below_detected(ctx: Context) -> List[Signal]:
    """No GPU named, but the package's own check measured it below its floor."""
    hit = ctx.first(_DETECTED, ("compute capability",))
    if hit is None:
        return []
    floor = Version(f"{hit[1].group(1)}.{hit[1].group(2)}")
    family = _family(floor).capitalize()
    who = _display(package_in(ctx, ctx.text.lines[hit[0]]) or (
        "sageattention" if ctx.text.containing(("sageattention",)) else None))
    return [Signal("capability_floor", Category.GPU_UNSUPPORTED,
                   f"{who} measured this machine's GPU below compute capability {floor} "
                   f"({family}), the least its kernels support",
                   [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary=f"{who} cannot run on this GPU: use an attention that does "
                           f"(PyTorch SDPA: in ComfyUI the default attention, elsewhere "
                           f"attn_implementation=\"sdpa\"), or a GPU of compute capability "
                           f"{floor} or newer ({family} or newer).")])]


def _generation_top(lowest: Version) -> Version:
    """The highest compute capability of the generation starting at `lowest` (just below the
    next generation's first); the newest generation has no known top."""
    later = [Version(cc) for cc in ARCH_FAMILY_CC.values() if Version(cc) > lowest]
    return _just_below(min(later)) if later else Version("99.0")


def _just_below(cc: Version) -> Version:
    return Version(f"{cc.major}.{cc.minor - 1}") if cc.minor else Version(f"{cc.major - 1}.9")


def _family(cc: Version) -> str:
    """NVIDIA's architecture name of a compute capability (the newest family at or below it)."""
    return max(((f, Version(low)) for f, low in ARCH_FAMILY_CC.items() if Version(low) <= cc),
               key=lambda pair: pair[1])[0]


def _display(package: Optional[str]) -> str:
    return {"tensorrt-llm": "TensorRT-LLM", "sageattention": "SageAttention",
            None: "the package"}.get(package, package or "")


def _upgrade(package: Optional[str]) -> List[str]:
    """The upgrade command, where a plain one works: flash-attn builds against the installed
    torch; TensorRT-LLM installs from NVIDIA's index (its install guide), so none is given."""
    if package is None or package == "tensorrt-llm":
        return []
    if package == "flash-attn":
        return ["pip install --upgrade flash-attn --no-build-isolation --no-cache-dir"]
    return [f"pip install --upgrade {package}"]
