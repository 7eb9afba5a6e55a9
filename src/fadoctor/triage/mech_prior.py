"""The last resort, run only when no mechanism found a cause: a report that names a Blackwell
GPU (compute capability 10.0 or newer) and says something failed, with no error message that
explains it. Binaries built before CUDA 12.8 carry no code for these GPUs (no earlier nvcc
targets sm_100 or sm_120: flash-attention's setup.py adds them only for nvcc >= 12.8, v2.7.3 to
v2.8.3), so such a binary is the likeliest cause; the finding says it is a guess from the GPU,
and what would confirm it (pure)."""

from __future__ import annotations

from typing import List, Optional

from packaging.version import Version

from fadoctor.matrix.pytorch import TorchRelease
from fadoctor.report import Category, Remedy, Severity
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_symbols import package_in
from fadoctor.triage.signal import FAILED, FAILED_NEEDLES, GUESSED, HINTED, IMPLIED, Signal, dedupe
from fadoctor.triage.torch_archs import stated_variant, torch_lacks, torch_with_arch, variants
from fadoctor.triage.torch_remedies import last_torch_with

_BLACKWELL = Version("10.0")


def _archs(release: TorchRelease, variant: str) -> str:
    return "sm " + release.arch_lists[variant].replace(";", ", ")


_TORCH_SAYS = ("with the current pytorch", "which is of compute capability", "kernel image",
               "invalid device function", "nokernelimage", "no_binary_for_gpu")
# words that say the GPU and the build do not go together (then the stated pair implies it);
# a mere failure beside them only hints at it, below any error the report names
_INCOMPATIBLE = ("incompatib", "not compatible", "not supported", "unsupported", "no kernel")


def torch_lacks_gpu(ctx: Context) -> List[Signal]:
    """The torch build a report states (release, and CUDA variant where stated) and the GPU it
    names, with a word of trouble: where the matrix's arch lists for that build (read from the
    wheels) hold nothing that runs on the GPU, every CUDA call fails, whatever else is said. A
    release stated without its CUDA build is taken as PyPI's default build, and said so."""
    cc, torch, gpu = ctx.gpu_cc_exact, ctx.torch, ctx.gpu
    release = ctx.matrix.torch_release(torch) if torch is not None else None
    if cc is None or gpu is None or torch is None or release is None or ctx.amd \
            or ctx.torch_is_nightly or not torch_lacks(ctx, cc) or ctx.text.containing(_TORCH_SAYS):
        return []  # torch's own message, where printed, is read by torch_arch and no_kernel_image
    said, strength = ctx.text.containing(_INCOMPATIBLE), IMPLIED
    if not said:
        said, strength = ctx.text.containing(FAILED_NEEDLES), HINTED
    if not said:
        return []
    variant = stated_variant(ctx)
    build = f"torch {torch.public}" + (f" ({variant})" if variant else
                                       f" (stated without its CUDA build: PyPI's default, "
                                       f"{release.default_variant})")
    variant = variant or release.default_variant
    return [Signal("torch_lacks_gpu", Category.NO_KERNEL_IMAGE,
                   f"{build} has no kernels for {gpu[0]} (sm_{cc.major}{cc.minor}): its wheels "
                   f"were compiled for {_archs(release, variant)}, so every CUDA call on this "
                   "GPU fails with 'no kernel image is available'",
                   dedupe([gpu[2], *ctx.quotes("torch"), ctx.quote(said[0])]), strength,
                   torch_with_arch(ctx, cc), details={"source": release.source})]


def blackwell(ctx: Context) -> List[Signal]:
    """A Blackwell GPU named and a failure said, nothing else read."""
    if ctx.gpu is None or ctx.amd or ctx.text.containing(_AMD_WORDS):
        return []  # an AMD report comparing its GPU with an NVIDIA one ("MI50 is like 2080ti")
    name, cc, gpu_quote = ctx.gpu
    if cc is None or cc < _BLACKWELL:
        return []
    failed = ctx.first(FAILED, FAILED_NEEDLES)
    if failed is None:
        return []
    sm = f"sm_{cc.major}{cc.minor}"
    package = package_in(ctx)
    remedies: List[Optional[Remedy]] = [*torch_with_arch(ctx, cc)]
    if package == "flash-attn":
        remedies.append(r.force_build(ctx, f"Then flash-attn with {sm} code:"))
    else:
        remedies.append(Remedy(summary=f"Then {package or 'the package that failed'} built with "
                               f"{sm} code: its release whose wheels were built with CUDA 12.8 or "
                               f"newer, or a build from source against that torch with "
                               f'TORCH_CUDA_ARCH_LIST="{cc.major}.{cc.minor}".'))
    remedies.append(r.sdpa("Meanwhile, PyTorch SDPA runs on this GPU with such a torch."))
    quotes = dedupe([gpu_quote, ctx.quote(failed[0])])
    return [Signal("blackwell_prior", Category.NO_KERNEL_IMAGE,
                   f"no message names the cause, but the report names {name} ({sm}) and a "
                   f"failure: on Blackwell GPUs that is most often a binary ("
                   f"{package or 'torch or the package that failed'}) built before CUDA 12.8, "
                   f"with no {sm} code", quotes, GUESSED, r.keep(remedies), Severity.WARNING,
                   needs=[("the error itself: the whole traceback or log",
                           'python -c "import torch, flash_attn" 2>&1 | tail -n 40'),
                          ("the archs torch was built for",
                           'python -c "import torch; print(torch.__version__, '
                           'torch.cuda.get_arch_list())"')])]


_AMPERE = Version("8.0")
_DTYPES = ("bfloat16", "bf16", "float16", "fp16", "float8", "fp8", "dtype", "precision")
_REFUSED = ("not supported", "unsupported", "doesn't support", "does not support", "not support",
            "不支持")


_AMD_WORDS = ("rocm", "hipcc", ".hip", "gfx9", "gfx1", "amdgpu", "radeon", " mi50", " mi60", " mi100",
              " mi210", " mi250", " mi300")


def pre_ampere(ctx: Context) -> List[Signal]:
    """A GPU older than Ampere named with "not supported", nothing else read: FlashAttention-2
    (and FA3, FA4) need compute capability 8.0 or newer (flash-attention's README: "Ampere, Ada,
    or Hopper GPUs"; flash_api.cpp's is_sm8x check), the question such a report most often
    asks in this field."""
    if ctx.gpu is None or ctx.amd or ctx.text.containing(_AMD_WORDS):
        return []  # an AMD report comparing its GPU with an NVIDIA one ("MI50 is like 2080ti")
    name, cc, gpu_quote = ctx.gpu
    said = ctx.text.containing(_REFUSED)
    if cc is None or cc >= _AMPERE or not said or ctx.text.containing(_DTYPES):
        return []  # "does not support bfloat16" is a dtype's refusal, not the GPU's
    quotes = dedupe([gpu_quote, ctx.quote(said[0])])
    newest = max(ctx.matrix.torch_releases, key=lambda rel: Version(rel.minor), default=None)
    if not ctx.text.containing(("flash", "attn", "attention")) and newest is not None \
            and cc < Version("6.0") and not variants(newest, cc):
        # a Kepler or Maxwell GPU and no attention library in the report: torch's own builds
        # (a bare "V100 not supported" is still most often flash-attention's question)
        return [Signal("pre_ampere_prior", Category.GPU_UNSUPPORTED,
                       f"no message names the cause, but the report names {name} (compute "
                       f"capability {cc}, sm_{cc.major}{cc.minor}) as not supported: current "
                       f"PyTorch builds (torch {newest.minor}) carry no kernels for it, so a "
                       "stack built on one cannot run on this GPU", quotes, GUESSED,
                       [*last_torch_with(ctx, cc), Remedy(
                           summary="Or run on a newer GPU (an instance type of a later "
                           "generation), which current builds support.")], Severity.WARNING)]
    return [Signal("pre_ampere_prior", Category.GPU_UNSUPPORTED,
                   f"no message names the cause, but the report names {name} (compute capability "
                   f"{cc}) as not supported: FlashAttention-2 and its successors run only on "
                   "Ampere (8.0) or newer", quotes, GUESSED,
                   r.keep([r.no_flash_gpu(ctx), r.sdpa(f"On the {name}, PyTorch SDPA (its "
                                                        "memory-efficient backend, or xformers) "
                                                        "is the fallback.")]),
                   Severity.WARNING)]


PRIORS = (blackwell, pre_ampere)
