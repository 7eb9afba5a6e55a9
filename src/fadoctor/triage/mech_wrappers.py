"""Messages from the frameworks around flash-attention (transformers, vLLM, unsloth, axolotl,
LLaMA-Factory, ms-swift) that hide the real error, renamed flash-attn APIs their checks import,
and what torch and the driver say about the machine (pure)."""

from __future__ import annotations

import re
from collections import Counter
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy, Severity
from fadoctor.triage import mech_windows
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.mech_fallback import FALLS_BACK
from fadoctor.triage.signal import HINTED, LOGGED, NAMED, WRAPPED, Signal, dedupe
from fadoctor.triage.text import Quote

# Names callers import from flash_attn that a release renamed (flash_attn_facts.md §4, from
# flash_attn/flash_attn_interface.py at each tag): the compiled module is imported as
# flash_attn_gpu from v2.7.0 (as flash_attn_cuda before); 1.x's `unpadded` functions are
# `varlen` from v2.0.0.
RENAMED = {"flash_attn_cuda": ("2.7.0", "flash_attn_gpu"),
           "flash_attn_unpadded_func": ("2.0.0", "flash_attn_varlen_func"),
           "flash_attn_unpadded_qkvpacked_func": ("2.0.0", "flash_attn_varlen_qkvpacked_func"),
           "flash_attn_unpadded_kvpacked_func": ("2.0.0", "flash_attn_varlen_kvpacked_func")}
# Frameworks that check for flash-attn themselves: the module or log name -> the distribution.
WRAPPERS = {"transformers": "transformers", "vllm": "vllm", "unsloth": "unsloth",
            "axolotl": "axolotl", "llamafactory": "llamafactory", "llmtuner": "llamafactory",
            "swift": "ms-swift", "sglang": "sglang", "xformers": "xformers", "peft": "peft",
            "trl": "trl", "lmdeploy": "lmdeploy", "deepspeed": "deepspeed"}

_NOT_THERE = re.compile(
    r"(flash[\s_-]?att\w*(?:[\s_-]?2)?|\bFA2\b)[^\n]{0,80}?\b(not installed|not found|not "
    r"available|seems to be broken|is broken|could not be imported|cannot be imported|"
    r"(?:dependency |package )?not ready|unavailable)|"
    r"(cannot|could not|unable to) use flash[\s_-]?att|"
    r"packages that were not found in your environment:[^\n]*flash_attn|"
    r"No module named '(flash_attn)'|"
    # a guarded import's flag asserted (Wan's `assert FLASH_ATTN_2_AVAILABLE`): the import failed
    r"\bassert\s+(?:\w+\.)*\w*flash_?attn\w*_available\b", re.IGNORECASE)
_RENAMED = re.compile(r"from\s+(flash_attn[\w.]*)\s+import\s+(\w+)|"
                      r"cannot import name '(\w+)' from '(flash_attn[\w.]*)'")
_INSTALLED = re.compile(r"flash[-_ ]?attn\w*\s+(?:is|was)\s+(?:already\s+)?installed|"
                        r"installed flash[-_ ]?attn|successfully installed[^\n]*flash[-_]attn|"
                        r"site-packages/flash_attn", re.IGNORECASE)
_DLL = re.compile(r"DLL load failed(?: while importing (\w+))?")
_MAC = re.compile(r"\b(?:Darwin|macOS|Mac OS X?|OSX|Apple M\d|Apple silicon\w?|MacBooks?|mps|M\d (?:Pro |"
                  r"Max |Ultra )?Macs?|Mac M\d|silicon\w? Macs?|mac pro\w*|on (?:a |my )?mac)\b", re.I)
_MSVC = re.compile(r"()(?:Microsoft )?Visual C\+\+ [\d.]+ or greater is required|cl\.exe|MSVC|vcvars|"
                   r"unsupported Microsoft Visual Studio version", re.IGNORECASE)


def wrappers(ctx: Context) -> List[Signal]:
    # a dumped configuration ({'flash_attn_3_version': 'not installed', ...}) lists versions, it
    # does not report a framework's check
    hit = next(((i, m) for i, m in ctx.find(_NOT_THERE, ("flash", "fa2"))
                if ctx.text.lines[i].count("': ") < 3), None)
    if hit is None:
        return []
    index, _ = hit
    quotes = [ctx.quote(index)]
    reason = _fallback_reason(ctx, index)
    if reason is not None:
        return [reason]
    if FALLS_BACK.search(ctx.text.lines[index]):
        return []  # the program's own fallback said on the line: mech_fallback's warning
    installed = installed_quote(ctx)
    broken = "broken" in ctx.low(index)  # "seems to be broken": installed, its import fails
    cc = ctx.gpu_cc_exact
    if broken and cc is not None and cc >= Version("10.0"):
        return [Signal(
            "wrapper", Category.NO_KERNEL_IMAGE,
            f"the framework finds flash-attn installed but broken on {ctx.gpu[0] if ctx.gpu else 'this GPU'} "
            f"(sm_{cc.major}{cc.minor}): a flash-attn build from before Blackwell support has no "
            "kernels for it (its import or first call fails)", dedupe(
                [*quotes, *([ctx.gpu[2]] if ctx.gpu else [])]), WRAPPED,
            r.keep([r.force_build(ctx, f"Build flash-attn with sm_{cc.major}{cc.minor} code on "
                                       "this machine:"),
                    r.sdpa("Or let the framework fall back (it says so) to SDPA/xformers.")]),
            severity=Severity.WARNING,
            needs=[("the real import error, which the framework's message hides", r.REVEAL_IMPORT)])]
    if installed is None and not broken:
        fixes = _install(ctx)
        if "not found in your environment" in ctx.low(index):
            fixes.insert(0 if _scans_try_blocks(ctx) else len(fixes), _CHECK_IMPORTS)
        elif not any(raised.kind not in ("warning", "log") for raised in ctx.seen.raised):
            fixes.insert(0, _OPTIONAL)  # the message alone: a warning, nothing failed
        return [Signal(
            "wrapper", Category.NOT_INSTALLED,
            "flash-attn is not installed in the environment that runs this (the frameworks do "
            "not install it themselves)", quotes, WRAPPED, fixes,
            severity=Severity.WARNING,
            needs=[("whether flash-attn is installed there, and whether it imports",
                    'pip show flash-attn; python -c "import flash_attn"')])]
    return [Signal(
        "wrapper", Category.TORCH_VERSION_MISMATCH,
        "the framework says flash-attn is missing or broken, but "
        + ("it says broken" if installed is None else "the report shows it installed") + ": "
        "its import fails, and the framework's message hides the real error (most often a "
        "flash-attn binary built for another torch: an undefined symbol)",
        dedupe([*quotes, *([installed] if installed else [])]), WRAPPED,
        [Remedy(summary="Import it directly to see the real error, then triage that output.",
                commands=[r.REVEAL_IMPORT]),
         r.reinstall(ctx, "If it is an undefined symbol:")],
        severity=Severity.WARNING,
        needs=[("the real import error, which the framework's message hides", r.REVEAL_IMPORT)])]


# transformers' check of a model's remote code (trust_remote_code) lists every module it imports
# and refuses the model when one is missing; from 4.27.0, imports inside try/except are left out
# (transformers==4.27.0:transformers/dynamic_module_utils.py:119, get_imports; not in 4.26.1), so
# a model that imports flash_attn only optionally loads without it there
_SKIPS_TRY = Version("4.27.0")
_CHECK_IMPORTS = Remedy(
    summary="transformers refuses the model's remote code before it runs, for every module the "
    "code imports; from 4.27.0 it skips imports inside try/except, so a model whose code makes "
    "flash_attn optional loads without it: upgrade transformers (to the release the model card "
    "names).", commands=["pip install --upgrade transformers"])


def _scans_try_blocks(ctx: Context) -> bool:
    """The stated transformers, if any, still counts optional imports as required."""
    stated = ctx.package("transformers")
    version = parse_version(stated.value) if stated else None
    return version is None or version < _SKIPS_TRY


def _fallback_reason(ctx: Context, index: int) -> Optional[Signal]:
    """A framework that names why it will not use flash-attention (vLLM: "Cannot use
    FlashAttention-2 backend for Volta and Turing GPUs", "... for dtype other than ...")."""
    low, quotes = ctx.low(index), [ctx.quote(index)]
    old_gpu = ctx.gpu_cc is not None and ctx.gpu_cc < Version("8.0") and not ctx.amd
    if any(w in low for w in ("volta", "turing", "compute capability")) \
            or re.search(r"(?<![\w.-])gpus?\b", low) or (
            old_gpu and any(w in low for w in ("this device", "this gpu"))):
        return Signal("wrapper", Category.GPU_UNSUPPORTED,
                      "the framework will not use FlashAttention-2 on this GPU: it needs Ampere "
                      "(sm_80) or newer", dedupe([*quotes, *([ctx.gpu[2]] if ctx.gpu else [])]),
                      LOGGED, [r.sdpa("It falls back to another attention backend; to choose one:")],
                      severity=Severity.WARNING)
    if "dtype" in low:
        return Signal("wrapper", Category.DTYPE_UNSUPPORTED,
                      "the framework will not use FlashAttention-2 for this dtype (fp16 and bf16 "
                      "only)", quotes, LOGGED,
                      [Remedy(summary="Run the model in bfloat16 or float16 (e.g. vLLM's "
                              "--dtype bfloat16).")], severity=Severity.WARNING)
    if "head size" in low or "head dim" in low:
        return Signal("wrapper", Category.HEAD_DIM_UNSUPPORTED,
                      "the framework will not use FlashAttention-2 for this model's head size",
                      quotes, LOGGED, [r.sdpa("It falls back to another backend; to choose one:")],
                      severity=Severity.WARNING)
    return None


_OPTIONAL = Remedy(summary="Where nothing failed, this is a warning only: flash-attn is optional, "
                   "and the framework runs without it (PyTorch SDPA or eager attention, slower and "
                   "using more memory on long sequences); install it for the speed.")


def installed_quote(ctx: Context) -> Optional[Quote]:
    """The line that says flash-attn is installed (a version listed, or the words)."""
    stated = ctx.package("flash-attn", "flash-attn-2", "flash-attn-3", "flash-attn-4")
    if stated is not None:
        return stated.quote
    hit = ctx.first(_INSTALLED, ("install", "site-packages/flash_attn"))
    return ctx.quote(hit[0]) if hit else None


def _install(ctx: Context) -> List[Remedy]:
    exact = r.exact_wheel(ctx, replace_installed=False)
    generic = Remedy(summary="Install flash-attn into the environment the framework runs in: "
                     "setup.py fetches the prebuilt wheel for its torch, CUDA and C++ ABI "
                     "(torch must be installed first).",
                     commands=["pip install flash-attn --no-build-isolation"])
    return [*([exact] if exact else []), generic, r.sdpa("Or run without it:")]


def renamed_api(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_RENAMED, ("flash_attn",)):
        name = found.group(2) or found.group(3)
        module = found.group(1) or found.group(4)
        low = ctx.low(index)
        failing = found.group(3) is not None or any(
            w in low for w in ("fail", "error", "broken", "cannot", "can't"))
        if name not in RENAMED or not failing:
            continue
        since, new = RENAMED[name]
        installed = ctx.fa2
        if installed is not None and installed < Version(since):
            continue
        caller = _caller(ctx)
        quotes = dedupe([ctx.quote(index), *filter(None, [ctx.fa_quote()])])
        return [Signal(
            "renamed_api", Category.VERSION_CONFLICT,
            f"{caller or 'the caller'} imports {name} from {module}, a name flash-attn {since} "
            f"renamed to {new}" + (f" (installed: flash-attn {installed})" if installed else "")
            + f": {caller or 'the caller'} was written for an older flash-attn, which is not broken",
            quotes, NAMED if found.group(3) else LOGGED, _rename_remedies(ctx, caller, since),
            details={"name": name, "renamed_in": since, "new_name": new})]
    return []


def _caller(ctx: Context) -> Optional[str]:
    """The framework the report is about: named in the traceback's paths, else most often."""
    counts: Counter[str] = Counter()
    lower = ctx.text.lower_lines
    for word, dist in WRAPPERS.items():  # counted on the lines that hold the word only
        counts[dist] += sum(lower[i].count(word) + 2 * lower[i].count(f"/{word}/")
                            for i in ctx.text.holding((word,)))
    counts = +counts  # drop the zeros
    return counts.most_common(1)[0][0] if counts else None


def _rename_remedies(ctx: Context, caller: Optional[str], since: str) -> List[Remedy]:
    older = max((rel.version for rel in ctx.matrix.flash_attn_releases
                 if rel.version < Version(since) and not rel.version.is_prerelease), default=None)
    out = []
    if caller:
        out.append(Remedy(summary=f"Upgrade {caller}: its releases that know flash-attn {since}'s "
                          "names detect it correctly.", commands=[f"pip install --upgrade {caller}"]))
    if older is not None:
        out.append(Remedy(summary=f"Or keep {caller or 'the caller'} and install the last "
                          f"flash-attn before {since}.",
                          commands=[f"pip install flash-attn=={older} --no-build-isolation"]))
    return out


_UNCHECKED = re.compile(r"^\s*[-*]\s*\[ \]")
_FLASH_NAMED = re.compile(r"flash[-_ ]?att(?:n|ention)", re.I)
# a build's own words that it found no CUDA: CMake's message, torch's cpp_extension
# ("CUDA_HOME environment variable is not set"), nvcc missing
_NO_CUDA_BUILD = re.compile(r"Neither CUDA nor HIP|(?:CUDA|CUDAToolkit|HIP)\b[^\n]{0,30}"
                            r"\bnot (?:be )?found|No CUDA (?:toolkit|compiler|runtime) (?:is )?found|"
                            r"CUDA_HOME environment variable is not set|nvcc: (?:command )?not found|"
                            r"Failed to find nvcc", re.I)


_URL = re.compile(r"https?://\S+")
_WITHOUT_FLASH = re.compile(r"\bwithout\s+(?:the\s+)?`?(?:flash[-_ ]?att(?:n|ention)|xformers)", re.I)


def _flash_named(ctx: Context) -> bool:  # outside a link (PyTorch's FlashAttentionKernel.cpp)
    for index, found in ctx.find(_FLASH_NAMED, ("flash",)):
        urls = [u.span() for u in _URL.finditer(ctx.text.lines[index])]
        if not any(a <= found.start() < b for a, b in urls):
            return True
    return False


def platform(ctx: Context) -> List[Signal]:
    """flash-attention on a platform it does not build for: Windows (no official wheels; a build
    needs MSVC and matches one torch/CUDA exactly) or macOS (no CUDA at all)."""
    # an issue form's unchecked box ("- [ ] macOS") says the opposite
    mac = next(((i, m) for i, m in ctx.find(_MAC, ("darwin", "macos", "mac os", "apple ", "mps",
                                                    "macbook", " mac", "osx"))
                if not _UNCHECKED.match(ctx.text.lines[i])), None)
    # xFormers' attention kernels are CUDA (and ROCm) code too
    cuda_only = "flash-attention" if _flash_named(ctx) else "xFormers" \
        if ctx.has("xformers") else None
    if mac is not None and cuda_only is not None:
        # "running it without flash-attn runs into <error>": the person already left it out,
        # and the error shown is the failure; the platform is context
        without = ctx.first(_WITHOUT_FLASH, ("without",)) is not None and bool(ctx.seen.raised)
        return [Signal("platform", Category.PLATFORM_UNSUPPORTED,
                       f"{cuda_only} needs an NVIDIA (or AMD ROCm) GPU with CUDA: macOS has "
                       "neither, so it cannot be installed or run there", [ctx.quote(mac[0])],
                       HINTED if without else NAMED + 5, [r.sdpa("On a Mac:")])]
    # any other package's build that looks for CUDA (its CMake or setup.py) on a Mac
    build = ctx.first(_NO_CUDA_BUILD, ("cuda", "nvcc", "hip")) if mac is not None else None
    if mac is not None and build is not None:
        return [Signal("platform", Category.PLATFORM_UNSUPPORTED,
                       "this package compiles CUDA (or ROCm HIP) code, and macOS has neither: "
                       "Apple silicon is not supported by its build", dedupe(
                           [ctx.quote(build[0]), ctx.quote(mac[0])]), NAMED,
                       [Remedy(summary="Install and run it on Linux (or WSL2) with an NVIDIA GPU "
                               "and the CUDA toolkit (or an AMD GPU with ROCm); on a Mac use a "
                               "package or mode that runs on MPS or the CPU.")])]
    dll = ctx.first(_DLL, ("dll load failed",))
    if dll is not None and (dll[1].group(1) or "").startswith("flash_attn") \
            and "module could not be found" not in ctx.low(dll[0]):
        return [mech_windows.dll_symbol(ctx, dll[0])]
    build = ctx.first(_MSVC, ("visual c++", "msvc", "cl.exe", "vcvars", "visual studio"))
    hit = dll or build
    if hit is None or not (ctx.has("flash") or (hit[1].group(1) or "").startswith("flash")):
        return []
    what = ("Windows cannot load this flash-attn extension" if dll else
            "the flash-attn build needs the MSVC toolchain on Windows")
    return [Signal(
        "windows", Category.PLATFORM_UNSUPPORTED,
        f"{what}: flash-attention publishes wheels for Linux x86_64 only, so on Windows it must be "
        "built (hours, with MSVC and the CUDA toolkit) or taken from a third party, and must match "
        "this torch and CUDA exactly", [ctx.quote(hit[0])], NAMED,
        [Remedy(summary="Run under WSL2 or Linux, where the official wheels install."),
         r.sdpa("Or, on Windows:")])]
