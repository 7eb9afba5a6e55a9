"""A question rather than an error: "Does FlashAttention-3 support the A100?", "Will flash-attn
work on an RTX 5090?", "Can I use flash-attn-4 on my 4090?". The answer is the matrix's, for the
generation the question names and the GPU it names: FA2's wheel archs by release (a cubin of
sm_XY runs on the same major's later minors), FA3's builds (sm_90a, and sm_80 kernels from
hopper/ at v2.7.3 unless disabled; none for Blackwell), and each flash-attn-4 beta's forward and
backward arch asserts (data/compat_matrix.yaml). FA2 below Ampere is mech_pre_ampere's (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import remedies as r
from fadoctor.triage import switches
from fadoctor.triage.context import Context
from fadoctor.triage.signal import FAILED, HINTED, Signal, dedupe

_FA4 = re.compile(r"flash[-_ ]?attn[-_ ]?4|flash[-_ ]?attention[-_ ]?4|\bfa-?4\b|flash_attn\.cute|"
                  r"flashattention-4", re.I)
_FA3 = re.compile(r"flash[-_ ]?attn[-_ ]?3|flash[-_ ]?attention[-_ ]?(?:v)?3|\bfa-?3\b|"
                  r"flash_attn_interface|flashattention-3|\bhopper/", re.I)
_FA2 = re.compile(r"flash[-_ ]?attn|flash[-_ ]?attention|flashattention|\bfa-?2\b", re.I)
_ASKS = re.compile(r"\?|\b(?:support(?:s|ed)?|work(?:s|ing)?|run(?:s|ning)?|compatible|use)\b",
                   re.I)
# asked, not told: a question mark, or a line opening as questions do ("Does FA3 support ...")
_QUESTION = re.compile(r"\?|^\W*(?:does|do|will|can|could|would|is|are|any)\b", re.I)
SOURCE = "data/compat_matrix.yaml (flash_attn_releases archs, families, fa4_releases)"


def _asked(ctx: Context, strict: bool = True) -> Optional[Tuple[int, str]]:
    for index in ctx.text.containing(("flash", "fa2", "fa3", "fa4", "fa-", "hopper/")):
        line = ctx.text.lines[index]
        if not _ASKS.search(line) or (strict and (not _QUESTION.search(line) or FAILED.search(line))):
            continue  # "Install FA3 from ToT. Run the test." tells; "FA3 fails ..." reports
        for pattern, family in ((_FA4, "fa4"), (_FA3, "fa3"), (_FA2, "fa2")):
            if pattern.search(line):
                return index, family
    return None


# flash-attn on Windows, asked: its README (v2.8.3, Requirements) says "Linux. Might work for
# Windows starting v2.3.2 ... but Windows compilation still requires more testing", and its
# release workflow publishes Linux wheels only (data/compat_matrix.yaml flash_attn_releases).
_WINDOWS = re.compile(r"\bwin(?:dows|10|11|_amd64)\b|\bwin ?1[01]\b", re.I)


def windows_question(ctx: Context) -> List[Signal]:
    if any(raised.kind not in ("warning", "log") for raised in ctx.seen.raised):
        return []
    asked = _asked(ctx, strict=False)  # "flash-attn on Windows" is the topic, asked or told
    if asked is None or asked[1] != "fa2" or not _WINDOWS.search(ctx.text.lines[asked[0]]):
        return []
    return [Signal("platform_question", Category.PLATFORM_UNSUPPORTED,
                   "flash-attn's releases publish Linux wheels only; its README says a Windows "
                   "build \"might work\" from v2.3.2 but needs more testing",
                   [ctx.quote(asked[0])], HINTED,
                   [Remedy(summary="On Windows: run under WSL2, where the official Linux wheels "
                           "install; or build from the sdist with Visual Studio's C++ tools and "
                           "the CUDA toolkit of torch's CUDA (hours; bound it with MAX_JOBS), or "
                           "a community-built wheel whose name matches this torch, CUDA and Python "
                           "(cpXY-win_amd64).", commands=["wsl --install"]),
                    r.sdpa("Or run without it: PyTorch SDPA needs no install.")],
                   details={"source": "Dao-AILab/flash-attention@v2.8.3:README.md:71"})]


def question(ctx: Context) -> List[Signal]:
    cc, gpu = ctx.gpu_cc, ctx.gpu
    if cc is None or gpu is None or ctx.amd or ctx.fa2 is not None \
            or any(raised.kind not in ("warning", "log") for raised in ctx.seen.raised):
        return []
    asked = _asked(ctx)
    if asked is None:
        return []
    index, family = asked
    answer = {"fa4": _fa4, "fa3": _fa3, "fa2": _fa2}[family](ctx, cc)
    if answer is None:
        return []
    supported, message, fixes = answer
    if not supported:  # a framework that picked it (vLLM's V1 engine) has its own switch
        fixes = r.keep([switches.remedy(ctx, "Take another attention backend in the framework:"),
                        *fixes])
    name = f"{gpu[0]} (sm_{cc.major}{cc.minor})"
    return [Signal("gpu_question", Category.INFO if supported else Category.GPU_UNSUPPORTED,
                   f"{name}: {message}", dedupe(sorted([ctx.quote(index), gpu[2]],
                                                       key=lambda q: q.line)),
                   HINTED, fixes, details={"source": SOURCE})]


Answer = Optional[Tuple[bool, str, List[Remedy]]]


def _fa2(ctx: Context, cc: Version) -> Answer:
    if cc < Version("10.0"):
        return None  # below Ampere: mech_pre_ampere; Ampere to Hopper: every 2.x release
    first = next((rel for rel in ctx.matrix.flash_attn_releases if any(
        a == f"sm_{cc.major}{m}" for a in rel.archs for m in range(cc.minor + 1))), None)
    if first is None:
        return False, "no flash-attn 2.x release has kernels for this architecture", [
            r.sdpa("Use PyTorch SDPA on this GPU.")]
    return True, (f"flash-attn 2.x has kernels for it from {first.version} on (its wheels carry "
                  f"sm_{cc.major}x code)"), [
        Remedy(summary=f"Install flash-attn {first.version} or later (a build for this torch); "
               "older releases fail here with no kernel image.",
               commands=[command("pip", "install", f"flash-attn>={first.version}",
                                 "--no-build-isolation")])]


def _fa3(ctx: Context, cc: Version) -> Answer:
    fa2 = Remedy(summary="flash-attn 2.x is the flash-attention for this GPU.",
                 commands=[command("pip", "install", "flash-attn>=2.8.0", "--no-build-isolation")])
    if cc.major == 9:
        return True, "FlashAttention-3 is built for it (sm_90a, Hopper)", [
            Remedy(summary="Build FlashAttention-3 from flash-attention's hopper/ (CUDA 12.3 or "
                   "newer, torch 2.4 or newer).")]
    if cc.major == 8:
        return True, ("FlashAttention-3 is written for Hopper; builds from hopper/ at v2.7.3 and "
                      "later carry sm_80 kernels too (unless FLASH_ATTENTION_DISABLE_SM80), so it "
                      "runs on Ampere and Ada, without Hopper's speedups"), [fa2]
    return False, ("no FlashAttention-3 build has kernels for it (sm_90a, and sm_80 only)"
                   if cc.major >= 10 else "FlashAttention-3 needs Ampere or newer"), [
        fa2 if cc.major >= 10 else r.sdpa("Use PyTorch SDPA on this GPU."),
        *([Remedy(summary="Or flash-attn-4 on data-center Blackwell (sm_100/sm_103).")]
          if cc.major == 10 else [])]


def _fa4(ctx: Context, cc: Version) -> Answer:
    betas = sorted((b for b in ctx.matrix.fa4_releases if b.published), key=lambda b: b.version)
    if not betas:
        return None
    forward = next((b for b in betas if cc.major in b.forward_cc_majors), None)
    backward = next((b for b in betas if cc.major in b.backward_cc_majors), None)
    newest = betas[-1]
    if forward is None:
        return False, (f"no flash-attn-4 beta runs on compute capability {cc.major}.x (the newest, "
                       f"{newest.version}, takes {', '.join(map(str, newest.forward_cc_majors))})"
                       ), [r.sdpa("Use flash-attn 2.x or PyTorch SDPA on this GPU.")]
    trains = (f"backward from {backward.version}" if backward is not None else
              "no beta has its backward here (inference only)")
    return backward is not None, (f"flash-attn-4 runs its forward here from {forward.version} on, "
                                  f"{trains}"), [
        Remedy(summary=f"Install flash-attn-4 {newest.version} (add the [cu13] extra on CUDA 13)"
               + ("" if backward is not None else "; train with flash-attn 2.x or SDPA") + ".",
               commands=[command("pip", "install", "--upgrade", f"flash-attn-4=={newest.version}")])]
