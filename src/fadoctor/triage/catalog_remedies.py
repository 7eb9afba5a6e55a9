"""The fix for each catalogued message, by its category and source, joined with the facts the
report states and the message's captures (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from packaging.version import Version

from fadoctor.install.torch import torch_install
from fadoctor.install.wheels import first_release_with_kernels
from fadoctor.report import Category, Remedy
from fadoctor.triage import (
    cudnn_remedies,
    hf_remedies,
    serve_remedies,
    switches,
    torch_remedies,
    wrapper_remedies,
)
from fadoctor.triage import remedies as r
from fadoctor.triage.catalog_data import Entry
from fadoctor.triage.context import Context, parse_version

FA2 = 'pip install "flash-attn>=2,<3" --no-build-isolation'
# NVIDIA's CuTe DSL quick start (docs.nvidia.com/cutlass, pythonDSL/quick_start): the module
# `cutlass` comes from the nvidia-cutlass-dsl wheel; what each flash-attn-4 beta requires is the
# matrix's fa4_releases (generated from flash_attn/cute/pyproject.toml by tools/gen_fa4_betas.py).
CUTE_DSL = serve_remedies.DSL


def fa1(entry: Entry) -> bool:
    return entry.last.startswith(("v0.", "v1."))


def captured_cc(entry: Entry, values: Dict[str, str]) -> Optional[Version]:
    """FA4 prints the arch as major*10+minor (121 for compute capability 12.1)."""
    for name, fact in entry.captures:
        raw = values.get(name, "").strip(".,:;")
        if fact == "gpu_arch" and raw.isdigit() and 2 <= len(raw) <= 3:
            return Version(f"{raw[:-1]}.{raw[-1]}")
    return None


# vLLM picks the FA version of its vllm_flash_attn (vllm-project/vllm@0fa99d44d842:
# vllm/attention/utils/fa_utils.py:35-42: FA3 on compute capability 9.x when its gate passes, else
# FA2; VLLM_FLASH_ATTN_VERSION overrides); vllm@001f69f8b52e:vllm/envs.py documents it ("2 or 3")
# and VLLM_ATTENTION_BACKEND (TORCH_SDPA, FLASH_ATTN, XFORMERS, ROCM_FLASH, FLASHINFER, FLASHMLA).
VLLM_SOURCE = "vllm-project/vllm@0fa99d44d842:vllm/attention/utils/fa_utils.py"


def vllm_fa(entry: Entry) -> Remedy:
    if entry.printed.startswith("FA2"):
        return Remedy(summary=f"vllm_flash_attn's FA2 gate ({entry.location}) refuses GPUs below "
                      "compute capability 8.0: choose another vLLM attention backend with "
                      "VLLM_ATTENTION_BACKEND (vllm/envs.py lists TORCH_SDPA, XFORMERS, "
                      "FLASHINFER among its values), or SDPA outside vLLM.")
    return Remedy(summary=f"vLLM asked vllm_flash_attn for an FA version its gate refuses on "
                  f"this GPU ({entry.location}, {entry.first}..{entry.last}); vLLM chooses the "
                  f"version ({VLLM_SOURCE}) and VLLM_FLASH_ATTN_VERSION (2 or 3, vllm/envs.py) "
                  "forces one: force FA2, or choose another attention backend with "
                  "VLLM_ATTENTION_BACKEND.",
                  commands=["export VLLM_FLASH_ATTN_VERSION=2"])


# A check that gates one feature to some archs ("FP8 is only supported on SM100", "paged KV not
# supported on SM 8.0"): no later release of the same generation lifts it for this arch.
_FEATURE = re.compile(r"\bFP8\b|\bfp8\b|paged KV|SplitKV|determinism|score_mod|mask_mod|"
                      r"[Bb]lock[- ]sparsity|varlen", re.I)


def gpu(ctx: Context, entry: Entry, cc: Optional[Version]) -> List[Remedy]:
    feature = _FEATURE.search(entry.printed)
    if feature is not None:
        return r.keep([Remedy(summary=f"The check limits {feature.group(0)} to the GPUs it names "
                              f"(\"{entry.printed[:120]}\"), and this one is not among them: run "
                              f"without {feature.group(0)} on this GPU (fp16/bf16, the framework's "
                              "default settings), or on a GPU the message names."),
                       switches.remedy(ctx, "Or take another attention backend in the framework:"),
                       r.sdpa("Or PyTorch SDPA, which runs on any GPU.")])
    found = r.keep([switches.remedy(ctx, "Turn flash-attention off in the framework:")
                    if cc is None or cc < Version("8.0") else None,
                    r.sdpa("This flash-attn build has no kernels for this GPU's architecture: use "
                           'attn_implementation="sdpa" (or "eager"), which runs on any GPU.')])
    ampere = cc is not None and Version("8.0") <= cc < Version("9.0")
    later = _later_release(ctx, entry, cc)
    if later is not None:
        found.insert(0, later)
    if entry.source == "vllm-fa":
        found.insert(0, vllm_fa(entry))
    elif entry.source == "fa3" and (cc is None or ampere):
        found.insert(0, Remedy(summary="FlashAttention-3 (hopper/, flash_attn_interface) runs on "
                               "Hopper (sm90) only; on Ampere/Ada use flash-attn 2.x "
                               "(flash_attn.flash_attn_func).", commands=[FA2]))
    elif entry.source == "fa4" and ampere:
        found.insert(0, Remedy(summary=f"flash-attn-4 at {entry.last} does not run on compute "
                               f"capability {cc}; use flash-attn 2.x on Ampere/Ada.",
                               commands=[FA2]))
    elif fa1(entry) and cc is not None and cc >= Version("8.0"):
        found.insert(0, Remedy(summary=f"The check is flash-attn 1.x's ({entry.first}..."
                               f"{entry.last}); upgrade to flash-attn 2.x, which supports "
                               "Ampere, Ada and Hopper.",
                               commands=['pip install --upgrade "flash-attn>=2" '
                                         "--no-build-isolation"]))
    elif fa1(entry) and cc is None:  # older than Turing (no flash-attention runs) or Hopper
        found.append(Remedy(summary=f"The check is flash-attn 1.x's ({entry.first}...{entry.last}): "
                            "only on a Hopper GPU (sm90) does upgrading to flash-attn 2.x help; "
                            "on Volta or Pascal (V100, P100) no flash-attention release runs, so "
                            "turn it off as above.",
                            commands=['pip install --upgrade "flash-attn>=2" '
                                      "--no-build-isolation"]))
    return found


def _later_release(ctx: Context, entry: Entry, cc: Optional[Version]) -> Optional[Remedy]:
    """A later release that runs on this GPU: flash-attn's first with kernels for it (the
    matrix's wheel archs), or the first flash-attn-4 beta whose forward accepts its major."""
    if cc is None:
        return None
    if entry.source == "fa4":
        betas = sorted((b for b in ctx.matrix.fa4_releases if b.published), key=lambda b: b.version)
        first = next((b for b in betas if cc.major in b.forward_cc_majors), None)
        pkg = ctx.package("flash-attn-4", "flash-attn4")
        stated = parse_version(pkg.value) if pkg is not None else None
        if first is None or (stated is not None and stated >= first.version):
            return None  # the stated beta already accepts this GPU: another path refuses it
        back = "" if cc.major in first.backward_cc_majors else " (forward only in that beta)"
        return Remedy(summary=f"flash-attn-4 {first.version} is the first beta whose forward "
                      f"accepts compute capability {cc.major}.x{back}: upgrade.",
                      commands=[f'python -m pip install --upgrade "flash-attn-4>={first.version}"'])
    if entry.source not in ("fa-csrc", "fa-py") or cc < Version("10.0"):
        return None
    first_fa = first_release_with_kernels(ctx.matrix, cc)
    if first_fa is None:
        return None
    return Remedy(summary=f"flash-attn {first_fa.version} is the first release whose wheels carry "
                  f"kernels for sm_{cc.major}{cc.minor}: upgrade.",
                  commands=[f'pip install "flash-attn>={first_fa.version}" --no-build-isolation'])


# The head dims a literal message lists: "head size 64, 128, and 256", "head dimension at most 256".
_HEAD_LIMITS = re.compile(r"head[ _]?(?:size|dim)\w*\s+((?:at most |up to |<= ?)?\d+"
                          r"(?:(?:,\s|,?\s(?:and|or)\s)\d+){0,8})")


# flash_api.cpp at v2.8.3:153: under FLASHATTENTION_DISABLE_UNEVEN_K a build leaves out head dims
# that are not a multiple of 32 (builds that trim their kernels, as vLLM's does)
UNEVEN_K = "Dao-AILab/flash-attention@v2.8.3:csrc/flash_attn/flash_api.cpp:153"


def head_dim(ctx: Context, entry: Entry) -> List[Remedy]:
    switch = switches.remedy(ctx, "Take another attention backend in the framework:")
    if "multiple of 32" in entry.printed:
        return r.keep([switch, Remedy(
            summary="This flash-attention build was compiled with FLASHATTENTION_DISABLE_UNEVEN_K "
                    f"({UNEVEN_K}): head dims that are not a multiple of 32 are left out of it. "
                    "Use another attention backend for this model, or a flash-attn build without "
                    "that flag (the official wheels)."), r.sdpa("Or use SDPA:")])
    why = ("flash-attn 1.x's backward needs sm80 for head dim > 64; flash-attn 2.x supports "
           "head dim up to 256 forward and backward (256 on consumer GPUs from 2.5.5): upgrade."
           if fa1(entry) else "Head dim 256 backward on consumer GPUs (without dropout) works "
           "from flash-attn 2.5.5: upgrade.")
    if entry.source.startswith(("fa3", "fa4")):
        limits = _HEAD_LIMITS.search(entry.printed)
        named = f": head dim {limits.group(1)} only" if limits else " (the message names the limits)"
        why = (f"This head dim is outside what {entry.source.upper()} at {entry.last} compiles"
               f"{named}. Use a supported head dim, or flash-attn 2.x (head dim up to 256).")
    lifted = Remedy(summary=why, commands=['pip install --upgrade "flash-attn>=2.5.5" '
                                           "--no-build-isolation"])
    if fa1(entry) and _in_torch_sdpa(ctx):
        return [_sdpa_2_0_0(ctx)]
    return r.keep([lifted, switch, r.sdpa("Or use SDPA for this head dim on this GPU.")])


# torch 2.0.0's SDPA carried flash-attention 1.x's kernels and sent their backward to sm86/sm89
# GPUs for head dims above 64, where the kernel's own check refuses it; 2.0.1 dispatches those to
# another kernel (pytorch/pytorch#99736, "[2.0.1] Disable SDPA FlashAttention backward and mem eff
# attention on sm86+ for head_dim above 64", the release branch's cherry-pick of #99105)
def _sdpa_2_0_0(ctx: Context) -> Remedy:
    """torch 2.0.1 of the same CUDA build (a command only where the build is known: a bare
    upgrade would take the newest torch, not the fix)."""
    variant = ctx.torch_variant if ctx.torch is not None else None
    return Remedy(
        summary="The check runs inside PyTorch's own SDPA flash kernel (torch 2.0.0 carries "
        "flash-attention 1.x's): 2.0.0 sends its backward to GPUs other than sm80 for head dims "
        "above 64, and torch 2.0.1 routes those to another kernel (pytorch#99736). Upgrade torch "
        "to 2.0.1 (with its torchvision), or turn SDPA's flash backend off: "
        "torch.backends.cuda.enable_flash_sdp(False).",
        code="import torch\ntorch.backends.cuda.enable_flash_sdp(False)  # SDPA takes the "
             "memory-efficient or math kernel",
        commands=[torch_install("2.0.1", variant)] if variant else [])


def _in_torch_sdpa(ctx: Context) -> bool:
    """flash-attn 1.x's check printed by torch's SDPA: torch 2.0 stated, or SDPA named, and no
    flash-attn package in the report."""
    if ctx.fa2 is not None or ctx.text.containing(("flash_attn", "flash-attn")):
        return False
    torch_2_0 = ctx.torch is not None and (ctx.torch.major, ctx.torch.minor) == (2, 0)
    return torch_2_0 or bool(ctx.text.containing(("scaled_dot_product_attention",
                                                   "sdp-attention", "sdpa")))


def dtype() -> List[Remedy]:
    return [Remedy(summary="FlashAttention runs only in fp16 or bf16: load the model with "
                   "torch_dtype=torch.bfloat16 (or float16), or set bf16=True / fp16=True in the "
                   "trainer, and keep the attention inputs in that dtype (autocast).")]


def rocm(values: Dict[str, str], printed: str = "") -> List[Remedy]:
    if "dropout" in printed:  # the Triton AMD backend's own refusal (flash_attn_triton_amd/)
        return [Remedy(summary="flash-attn's Triton AMD backend has no dropout in these releases: "
                       "call it with dropout_p=0.0 (attention_dropout=0 in the model's config), "
                       "or build the Composable Kernel backend, which has it (unset "
                       "FLASH_ATTENTION_TRITON_AMD_ENABLE)."), r.sdpa("Or use PyTorch SDPA on ROCm.")]
    archs = values.get("archs", "this GPU's gfx arch")
    return [Remedy(summary=f"flash-attn's composable_kernel build accepts only the gfx archs its "
                   f"setup.py lists (gfx90a, gfx942, gfx950 at v2.8.x), not {archs}. Use its "
                   "Triton AMD backend (README: FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE), or SDPA.",
                   commands=['FLASH_ATTENTION_TRITON_AMD_ENABLE="TRUE" pip install flash-attn '
                             "--no-build-isolation"]),
            r.sdpa("Or use PyTorch SDPA on ROCm.")]


def toolchain(ctx: Context, entry: Entry) -> List[Remedy]:
    floor = re.search(r"CUDA (\d+(?:\.\d+)?)", entry.printed)
    stated = f" (the report states nvcc {ctx.nvcc})" if ctx.nvcc is not None else ""
    found = [Remedy(summary=f"The nvcc that setup.py found is older than CUDA "
                    f"{floor.group(1) if floor else 'the floor'}{stated}: install a CUDA toolkit "
                    "at or above it and point CUDA_HOME at it before building, or install a "
                    "prebuilt wheel.", commands=[r.REVEAL_TORCH, "nvcc -V"])]
    wheel = r.exact_wheel(ctx) if entry.source.startswith("fa-") else None
    return [*([wheel] if wheel else []), *found]


def platform() -> List[Remedy]:
    return [Remedy(summary="flash-attn's setup.py builds on Linux (and Windows in later 2.x); "
                   "run on Linux or WSL2, or use SDPA."),
            r.sdpa("Or use PyTorch SDPA, which needs no flash-attn.")]


def imports(ctx: Context, entry: Entry) -> List[Remedy]:
    module = entry.printed.split("'")[1]
    if module.split(".")[0] == "cutlass":
        if entry.dsl_versions:
            return serve_remedies.cutlass_module(ctx, entry)
        declared = serve_remedies.cutlass_missing(ctx, entry) if module == "cutlass" else []
        if declared:
            return declared
        return [Remedy(summary=f"flash-attn-4 ({entry.first}..{entry.last}) imports {module} from "
                       f"the CuTe DSL, {CUTE_DSL}, which is missing: install the version "
                       "flash-attn-4 declares (its dependencies).",
                       commands=[f'python -m pip install --upgrade flash-attn-4 "{CUTE_DSL}"'])]
    declared = serve_remedies.fa4_dependency(ctx, module)
    if declared:
        return declared
    return [Remedy(summary=f"flash-attn-4 ({entry.first}..{entry.last}) imports {module}, one of "
                   "its declared dependencies (flash_attn/cute/pyproject.toml): install "
                   "flash-attn-4 with its dependencies.",
                   commands=["python -m pip install --upgrade flash-attn-4"])]


def own_rule(entry: Entry) -> List[Remedy]:
    """A wrapper's message whose fix is its own (SageAttention's): the rule recorded with it."""
    return [Remedy(summary=f"{entry.remedy[:1].upper()}{entry.remedy[1:]}.")]


def for_entry(ctx: Context, entry: Entry, category: Category, values: Dict[str, str],
              cc: Optional[Version]) -> List[Remedy]:
    if entry.source == "hf":
        return hf_remedies.for_entry(ctx, entry, category, values)
    if entry.source in serve_remedies.SERVING:
        return serve_remedies.serving(ctx, entry, category)
    if entry.source == "sdpa":
        return torch_remedies.sdpa(ctx, entry)
    if entry.source == "cudnn":
        return cudnn_remedies.for_entry(ctx, entry, category)
    if entry.source.startswith("sage-"):
        return own_rule(entry)
    if category == Category.GPU_UNSUPPORTED:
        return gpu(ctx, entry, cc)
    if category == Category.HEAD_DIM_UNSUPPORTED:
        return head_dim(ctx, entry)
    if category == Category.ROCM:
        return rocm(values, entry.printed)
    if category == Category.BUILD_TOOLCHAIN:
        return toolchain(ctx, entry)
    if category == Category.PLATFORM_UNSUPPORTED:
        return platform()
    if entry.source in wrapper_remedies.WRAPPERS:
        return wrapper_remedies.for_entry(ctx, entry, values)
    if category in (Category.NOT_INSTALLED, Category.VERSION_CONFLICT):
        return imports(ctx, entry)
    return dtype()
