"""AMD GPUs asked about, or run, with the CUDA attention stack (pure):
- a question whether a library runs on AMD GPUs / ROCm ("Does xformers work also with AMD GPUs?",
  "Need support for gfx1100 (7900xtx)"), answered per library from its own sources: flash-attn
  builds for ROCm (its Composable Kernel backend for the Instinct archs the matrix lists, its
  Triton backend beyond them); xFormers was CUDA-only until its README listed experimental ROCm
  wheels for Linux at v0.0.28 (facebookresearch/xformers README.md at v0.0.28, "rocm 6.1"); FlashInfer
  has CUDA kernels only (its csrc/ is CUDA), so serving engines on ROCm take their Triton attention
  backend (SGLang: --attention-backend triton);
- a CUDA build of torch on an AMD machine (its requirements list nvidia-*-cu1x wheels, or its
  version carries +cuXXX): torch then finds no GPU at all; ROCm needs torch's ROCm build."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, IMPLIED, NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

_AMD = re.compile(r"\bAMD\b|\bROCm\b|\bRadeon\b|\bgfx\d{3,4}[a-z]?\b|\bInstinct\b|\bMI[123]\d{2}X?\b|"
                  r"\b(?:RX\s?)?[679]\d00\s?XTX?\b|\bamdgpu\b", re.I)
_ASKED = re.compile(r"\?|\b(?:support(?:s|ed)?|work(?:s|ing)?|run(?:s|ning)?|compatible|plans?)\b",
                    re.I)
_LIBRARIES = (("xformers", "xFormers"), ("flashinfer", "FlashInfer"), ("flash-attn", "flash-attn"),
              ("flash_attn", "flash-attn"), ("flash attention", "flash-attn"),
              ("flash-attention", "flash-attn"), ("flashattention", "flash-attn"))


def amd_question(ctx: Context) -> List[Signal]:
    """A question about a CUDA attention library on AMD GPUs, with no error of its own."""
    if any(raised.kind not in ("warning", "log") for raised in ctx.seen.raised):
        return []
    head = ctx.text.lines[:12]
    asked = next((i for i, line in enumerate(head) if _AMD.search(line) and _ASKED.search(line)),
                 None)
    if asked is None:
        return []
    low = "\n".join(head).lower()
    library = next((name for needle, name in _LIBRARIES if needle in low), None)
    if library is None:
        return []
    quotes = dedupe([ctx.quote(asked)])
    if library == "xFormers":
        remedies = [Remedy(summary="xFormers was CUDA-only until 0.0.28; from 0.0.28 its README "
                           "lists experimental ROCm wheels for Linux (built per ROCm release, "
                           "from PyTorch's ROCm index, matching the ROCm torch installed). "
                           "Otherwise PyTorch SDPA runs on ROCm torch and needs no xFormers."),
                    r.sdpa("Or:")]
        what = "xFormers on AMD GPUs: CUDA-only before 0.0.28, experimental ROCm wheels (Linux) from it"
    elif library == "FlashInfer":
        remedies = [Remedy(summary="FlashInfer has CUDA kernels only: on ROCm, serving engines take "
                           "their Triton attention backend instead (SGLang: --attention-backend "
                           "triton; vLLM's ROCm attention backends), and need no FlashInfer.")]
        what = "FlashInfer has no ROCm kernels: on AMD GPUs the engines use Triton attention"
    else:
        from fadoctor.triage.mech_gpu import _ck_archs, _triton_backend  # mech_gpu imports much

        remedies = _triton_backend(ctx)
        what = (f"flash-attn on AMD GPUs: its ROCm Composable Kernel backend builds for "
                f"{', '.join(_ck_archs(ctx))} (Instinct) only; its Triton backend runs beyond them")
    return [Signal("amd_question", Category.ROCM, what, quotes, HINTED, remedies)]


# an AMD GPU, not an AMD CPU ("AMD Ryzen 9" beside an NVIDIA card)
_AMD_GPU = re.compile(r"\bROCm\b|\bRadeon\b|\bgfx\d{3,4}[a-z]?\b|\bInstinct\b|\bMI[123]\d{2}X?\b|"
                      r"\bAMD (?:GPU|graphics|card)s?\b|\bRX\s?[5-9]\d00\b", re.I)
_CUDA_DEPS = re.compile(r"\bnvidia-(?:cublas|cuda-runtime|cudnn)-cu1\d\b")


def cuda_torch_on_amd(ctx: Context) -> List[Signal]:
    """A CUDA torch where the report runs an AMD GPU under ROCm and no NVIDIA GPU is named."""
    if any(g.vendor == "nvidia" for g in ctx.seen.gpus) or ctx.seen.get("torch_hip"):
        return []
    amd = next((i for i in ctx.text.containing(("rocm", "amd", "radeon", "gfx", "instinct"))
                if _AMD_GPU.search(ctx.text.lines[i])), None)
    if amd is None:
        return []
    cuda = _cuda_build(ctx)
    if cuda is None:
        return []
    return [Signal("cuda_torch_on_amd", Category.ROCM,
                   "this torch is a CUDA build (NVIDIA GPUs only), and the machine's GPU is AMD's: "
                   "under ROCm torch must be its ROCm build", dedupe([cuda, ctx.quote(amd)]),
                   IMPLIED,
                   [Remedy(summary="Install torch's ROCm build (Linux; pytorch.org's install "
                           "selector, ROCm variant, matching the host's ROCm release) in a fresh "
                           "venv, with no CUDA torch or nvidia-* wheels beside it; then packages "
                           "with compiled kernels need their ROCm builds too.",
                           commands=["rocminfo"])])]


def _cuda_build(ctx: Context) -> Optional[Quote]:
    """The line that shows torch is a CUDA build: its +cuXXX version, or nvidia CUDA wheels it
    requires."""
    if ctx.torch is not None and str(ctx.torch.local or "").startswith("cu"):
        quoted = ctx.quotes("torch")
        if quoted:
            return quoted[0]
    return next((ctx.quote(i) for i in ctx.text.containing(("nvidia-cublas", "nvidia-cuda-runtime",
                                                             "nvidia-cudnn"))
                 if _CUDA_DEPS.search(ctx.text.lines[i])), None)


# torch-directml (AMD and Intel GPUs on Windows through DirectML) runs beside a CPU build of torch:
# torch's own CUDA checks then say "Torch not compiled with CUDA enabled", and CUDA-only libraries
# (xformers' kernels, flash-attn, bitsandbytes) find no CUDA device
_DIRECTML = re.compile(r"directml", re.I)
_CUDA_ONLY = re.compile(r"--xformers\b|\bxformers\b|flash[_-]attn|bitsandbytes|Torch not compiled "
                        r"with CUDA enabled|No operator found for `memory_efficient_attention", re.I)


def directml(ctx: Context) -> List[Signal]:
    dml = ctx.first(_DIRECTML, ("directml",))
    if dml is None:
        return []
    cuda = next(((i, m) for i, m in ctx.find(_CUDA_ONLY, ("xformers", "flash", "bitsandbytes",
                                                          "not compiled with cuda",
                                                          "no operator found"))
                 if i != dml[0] or "xformers" in m.group(0).lower()), None)
    if cuda is None:
        return []
    webui = ctx.text.containing(("stable-diffusion-webui", "webui", "--opt-"))
    flags = (" In the webui: drop --xformers and take its DirectML-friendly attention "
             "(--opt-sub-quad-attention)." if webui else "")
    return [Signal("directml", Category.PLATFORM_UNSUPPORTED,
                   "this runs on DirectML (torch-directml beside a CPU build of torch), where CUDA "
                   "does not exist: CUDA-only libraries and options (xformers, flash-attn, "
                   "bitsandbytes) cannot work here", dedupe([ctx.quote(cuda[0]), ctx.quote(dml[0])]),
                   NAMED + 6,
                   [Remedy(summary="Turn the CUDA-only features off (no --xformers, no "
                           "flash-attention, no bitsandbytes quantization) and use the attention "
                           "that runs on DirectML." + flags)])]


# A ROCm (HIP) build of torch on Windows failing to load its own HIP library ("Error loading
# ...\torch\lib\c10_hip.dll or one of its dependencies", WinError 126): its dependencies are the
# HIP runtime DLLs (amdhip64_*.dll), which on Windows come with AMD's GPU driver (AMD Software:
# Adrenalin Edition), not with the wheel; a driver without them, or older than the build's HIP,
# leaves them missing
_HIP_DLL = re.compile(r"[\\/]torch[\\/]+lib[\\/]+(c10_hip|torch_hip|amdhip64\w*)\.dll", re.I)


def hip_dll_windows(ctx: Context) -> List[Signal]:
    hit = ctx.first(_HIP_DLL, ("_hip", "amdhip"))
    if hit is None or not ctx.text.containing(("winerror 126", "module could not be found",
                                               "one of its dependencies")):
        return []
    return [Signal("hip_driver", Category.DRIVER_TOO_OLD,
                   f"Windows cannot load torch's {hit[1].group(1)}.dll: a ROCm (HIP) build of torch "
                   "loads AMD's HIP runtime, which on Windows the AMD GPU driver installs, and the "
                   "installed driver does not provide the one this build needs",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Install the AMD GPU driver (AMD Software: Adrenalin Edition) "
                           "that this ROCm build of torch asks for (the package's README or "
                           "AMD's PyTorch-on-Windows page names the version), then start it "
                           "again; an NVIDIA-only setup needs the CUDA build of torch instead.")])]
