"""Attention-kernel libraries' own messages that are not about a GPU's arch list: SageAttention's
head-dim refusal and its compiled module for the GPU's arch missing, FlashInfer's build floor
read against the arch list it was given, and FlashInfer's cubin / jit-cache version skew (each
cited where it is matched) (pure)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.kernel_libs import libraries
from fadoctor.triage.mech_kernel_libs import library_version
from fadoctor.triage.signal import NAMED, Signal, dedupe

# SageAttention's head-dim refusal (2.x core.py: raise ValueError(f"Unsupported head_dim:
# {head_dim_og}"); 1.x: "headdim should be in [64, 96, 128].")
_HEAD = re.compile(r"Unsupported head_dim: (\d+)|headdim should be in \[64, 96, 128\]")


def head_dim(ctx: Context) -> List[Signal]:
    """SageAttention's refusal of a head dim (2.x pads smaller heads to 64 or 128 and refuses
    larger ones: a video model's VAE or text/image encoder, not its DiT), with the head dims each
    release takes from the table."""
    hit = ctx.first(_HEAD, ("unsupported head_dim", "headdim should be in"))
    sage = libraries().get("sageattention")
    if hit is None or sage is None:
        return []
    dim = hit[1].group(1)
    version, _ = library_version(ctx, sage)
    stated = sage.release(version)
    rows = [stated] if stated is not None else list(sage.releases)
    limits: Dict[str, str] = {}  # what the releases take -> the first release that does
    for row in rows:
        if row.heads or row.max_head:
            limit = ", ".join(map(str, row.heads)) if row.heads else f"up to {row.max_head}"
            limits.setdefault(limit, row.since)
    takes = "; ".join(f"{sage.display} {since}+ takes head dims {limit}"
                      for limit, since in limits.items())
    return [Signal("kernel_library_head_dim", Category.HEAD_DIM_UNSUPPORTED,
                   takes + (f"; this attention's head_dim is {dim}" if dim else ""),
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Apply SageAttention only to the attention layers whose "
                           "head_dim it takes (a video model's DiT), and keep PyTorch SDPA for the "
                           "others (its VAE, CLIP or text encoder): do not replace "
                           "F.scaled_dot_product_attention globally with sageattn."),
                    r.sdpa("Or use SDPA for this model:")],
                   details={"source": "data/kernel_libraries.yaml",
                            "where": "; ".join(row.where for row in rows)})]


_FLOOR = re.compile(r"FlashInfer requires (?:sm75\+|GPUs with sm75 or higher)")


def flashinfer_arch_list(ctx: Context) -> List[Signal]:
    """FlashInfer's build floor checks the archs it compiles for, not the GPU: torch's
    _get_cuda_arch_flags() (TORCH_CUDA_ARCH_LIST, else torch's own list). Before 0.3.0 any arch
    below sm_75 raises (v0.0.3 python/setup.py:38-44: `for cuda_arch_flags in ...: if arch < 75:
    raise`), from 0.3.0 only all of them (jit/core.py:57-59). On a GPU of sm_75 or newer the
    list is the cause: an environment's TORCH_CUDA_ARCH_LIST naming older GPUs."""
    hit = ctx.first(_FLOOR, ("flashinfer requires",))
    cc = ctx.gpu_cc_exact
    if hit is None or ctx.amd or (cc is not None and cc < Version("7.5")):
        return []
    arch = f"{cc.major}.{cc.minor}" if cc is not None else None
    if ctx.text.containing(("flashinfer/jit/", "check_cuda_arch", "gen_jit_spec")):
        return [_jit_targets(ctx, hit[0], cc)]
    fix = Remedy(summary="Build with TORCH_CUDA_ARCH_LIST set to this GPU's arch only (run it "
                 "where the setup.py that raised it is); `echo $TORCH_CUDA_ARCH_LIST` shows the "
                 "list the build saw.",
                 commands=[command(env("TORCH_CUDA_ARCH_LIST", arch), "pip", "install", "-e",
                                   ".", "--no-build-isolation")] if arch else [])
    return [Signal("flashinfer_arch_list", Category.BUILD_TOOLCHAIN,
                   "FlashInfer's build refuses the archs it was asked to compile for, not "
                   f"{ctx.gpu[0] if ctx.gpu else 'the GPU'}: before 0.3.0 any arch below sm_75 "
                   "in TORCH_CUDA_ARCH_LIST (or torch's own list when it is unset) raises this, "
                   "as a container's list naming older GPUs does",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED, [fix],
                   details={"source": "flashinfer-ai/flashinfer@v0.0.3:python/setup.py:38-44; "
                                      "v0.3.0:flashinfer/jit/core.py:57-59"},
                   needs=[] if arch else [("the GPU model", r.REVEAL_GPU)])]



def _jit_targets(ctx: Context, index: int, cc: Optional[Version]) -> Signal:
    """The JIT's own target list came out empty: FlashInfer takes it from
    FLASHINFER_CUDA_ARCH_LIST, else from torch's view of the GPUs, normalized per arch and toolkit
    (flashinfer/compilation_context.py: an arch given with a suffix, "12.0a", is taken as is)."""
    suffix = "a" if cc is not None and cc.major >= 9 else ""
    arch = f"{cc.major}.{cc.minor}{suffix}" if cc is not None else None
    return Signal("flashinfer_arch_list", Category.BUILD_TOOLCHAIN,
                  "FlashInfer's JIT found no target to compile for "
                  f"{ctx.gpu[0] if ctx.gpu else 'the GPU'}: its list (FLASHINFER_CUDA_ARCH_LIST, "
                  "else torch's view of the GPUs, filtered by what this release and the CUDA "
                  "toolkit support) came out empty or below sm75",
                  dedupe([ctx.quote(index), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                  [Remedy(summary="Name the GPU's arch yourself: FLASHINFER_CUDA_ARCH_LIST (with "
                          "its suffix, e.g. 12.0a, it is taken as given); or a newer CUDA "
                          "toolkit / flashinfer release that lists this GPU.",
                          commands=[command(env("FLASHINFER_CUDA_ARCH_LIST", arch), "python",
                                            "-c", "import flashinfer")] if arch else [])],
                  details={"source": "flashinfer-ai/flashinfer flashinfer/compilation_context.py "
                                     "(TARGET_CUDA_ARCHS), flashinfer/jit/core.py (check_cuda_arch)"},
                  needs=[] if arch else [("the GPU model", r.REVEAL_GPU)])


# flashinfer-ai/flashinfer@v0.6.14:flashinfer/jit/env.py:74-84 (_get_cubin_dir): with
# flashinfer-cubin installed, its version must equal flashinfer's, else RuntimeError(f"flashinfer-
# cubin version ({cubin}) does not match flashinfer version ({flashinfer}). ..."); without it,
# FLASHINFER_CUBIN_DIR or the default cache (~/.cache/flashinfer/cubins) is used.
_SKEW = re.compile(r"(flashinfer-cubin|flashinfer-jit-cache) version \(([\w.+]{1,40})\) does not "
                   r"match flashinfer version \(([\w.+]{1,40})\)")


def version_skew(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SKEW, ("does not match flashinfer version",))
    if hit is None:
        return []
    part, have, want = hit[1].groups()
    base = want.split("+", 1)[0]
    fixes = [Remedy(summary=f"Install {part} {base}, the same release as flashinfer (from the "
                    "package index where that release is published there, else from FlashInfer's "
                    "own wheel index as its install guide says for this CUDA)."),
             Remedy(summary=f"Or uninstall the stale {part}"
                    + (": FlashInfer then looks for cubins in FLASHINFER_CUBIN_DIR or its cache "
                       "(~/.cache/flashinfer/cubins)." if part == "flashinfer-cubin" else "."),
                    commands=[command("pip", "uninstall", "-y", part)])]
    return [Signal("flashinfer_version_skew", Category.VERSION_CONFLICT,
                   f"{part} {have} is installed beside flashinfer {want}: FlashInfer requires "
                   "the same release of both", [ctx.quote(hit[0])], NAMED, fixes,
                   details={"source": "flashinfer-ai/flashinfer@v0.6.14:flashinfer/jit/env.py:74-84"})]


# thu-ml/SageAttention@v2.2.0:sageattention/core.py:29-45 (`try: from . import sm89_compile;
# SM89_ENABLED = True except: SM89_ENABLED = False`) and :539,723,910 (`assert SM89_ENABLED,
# "SM89 kernel is not available. Make sure you GPUs with compute capability 8.9."`)
_SAGE_KERNEL = re.compile(r"SM(\d{2,3}) kernel is not available")


def sage_kernel_missing(ctx: Context) -> List[Signal]:
    """SageAttention's compiled module for the GPU's arch did not import: on a GPU of that very
    arch, the install (a wheel or build for another torch or GPU, or a partial one), not the GPU."""
    hit = ctx.first(_SAGE_KERNEL, ("kernel is not available",))
    if hit is None:
        return []
    arch = hit[1].group(1)
    cc = ctx.gpu_cc_exact
    own = cc is not None and f"{cc.major}{cc.minor}" == arch
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    if cc is not None and not own:
        return []  # another GPU: SageAttention's dispatch on the wrong arch (mech_arch_refused)
    return [Signal("sage_kernel_missing", Category.NO_KERNEL_IMAGE,
                   f"SageAttention's compiled sm{arch} module did not import"
                   + (f" on {ctx.gpu[0]}, an sm_{arch} GPU" if own and ctx.gpu else "")
                   + ": the install lacks it or was built for another torch (its import is "
                     "wrapped in try/except, so this assert is all that shows)", quotes, NAMED,
                   [Remedy(summary="Reinstall SageAttention built for this torch and this GPU: "
                           "a wheel made for the installed torch, CUDA and Python, or a build "
                           f"from its repository on this machine (TORCH_CUDA_ARCH_LIST="
                           f"{arch[:-1]}.{arch[-1]}); `python -c \"from sageattention import "
                           f"sm{arch}_compile\"` shows the real import error."),
                    r.sdpa("Meanwhile the program's PyTorch attention runs:")],
                   details={"source": "thu-ml/SageAttention@v2.2.0:sageattention/core.py:29-45, "
                                      "723"})]


# FlashInfer's XQA decode kernel (the TRT-LLM-derived one it picks for decode on SM90/SM12x) is
# compiled per head size and refuses any outside 16..256: flashinfer-ai/flashinfer
# flashinfer/jit/xqa.py (gen_xqa_module: ValueError(f"Invalid head_dim: {head_dim}, must be
# divisible by 16 and in range [16, 256]"); earlier "Invalid head_size: ...").
_XQA = re.compile(r"Invalid head_(?:dim|size): (\d+), must be divisible by 16 and in range "
                  r"\[16, 256\]")


def xqa_head_dim(ctx: Context) -> List[Signal]:
    hit = ctx.first(_XQA, ("must be divisible by 16 and in range",))
    if hit is None:
        return []
    dim = hit[1].group(1)
    return [Signal("xqa_head_dim", Category.HEAD_DIM_UNSUPPORTED,
                   f"FlashInfer's XQA decode kernel takes head dims 16..256 in steps of 16, and "
                   f"this model's is {dim}", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Decode through a kernel that takes this head dim: FlashInfer's "
                           "FA2 (tensor-core) decode path (BatchDecodeWithPagedKVCacheWrapper(..., "
                           "use_tensor_cores=True)), or in vLLM another attention backend than "
                           "FlashInfer's XQA (the Triton one: VLLM_ATTENTION_BACKEND=TRITON_ATTN)."),
                    Remedy(summary="Or a newer flashinfer whose XQA module lists this head dim "
                           "(flashinfer/jit/xqa.py's check).",
                           commands=[command("pip", "install", "--upgrade", "flashinfer-python")])],
                   details={"source": "flashinfer-ai/flashinfer:flashinfer/jit/xqa.py "
                                      "(gen_xqa_module)"})]
