"""nvcc refusing a GPU architecture the build asks for: one newer than the toolkit (sm_80 under
CUDA 10, the family-specific sm_100f before 12.9), or one older than its CUDA major still compiles
for (compute_30 under CUDA 11); and /usr/bin/nvcc, a distribution's older toolkit, found first on
PATH (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.archs import FAMILY_NVCC, FIRST_NVCC
from fadoctor.report import Category, Remedy
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.mech_build import prebuilt
from fadoctor.triage.signal import NAMED, Signal, dedupe

# (a title retypes the word: "Unsupported gpu architechture 'compute_89'")
_ARCH = re.compile(r"(?:Unsupported gpu arch\w{4,10} |Value )'(?:compute|sm)_(\d+)([af]?)(?:'|$)"
                   r"(?: is not defined for option 'gpu-architecture')?", re.I)
# archs a CUDA major no longer compiles for, by the lowest sm its ptxas lists: 11.7's sm_35
# (nvidia-cuda-nvcc-cu11 11.7.99), 12.0's sm_50 (nvidia-cuda-nvcc-cu12 12.0.76), 13.0's sm_75
_DROPPED_BY = {**{a: 11 for a in ("30", "32")}, **{a: 12 for a in ("35", "37")},
               **{a: 13 for a in ("50", "52", "53", "60", "61", "62", "70", "72")}}

def architecture(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ARCH, ("unsupported gpu arch", "for option 'gpu-architecture'"))
    if hit is None:
        return []
    digits = hit[1].group(1)
    dropped = _DROPPED_BY.get(digits)
    # the toolkit the report states (its nvcc, else its CUDA): one older than the CUDA that
    # dropped the arch did not refuse it for that
    stated = ctx.nvcc or parse_version(ctx.seen.get(o.CUDA))
    if dropped is not None and (stated is None or stated.major >= dropped):
        return [_dropped_arch(ctx, hit[0], digits, dropped)]
    newest = max(ctx.matrix.flash_attn_releases, key=lambda rel: rel.version)
    cc = ctx.gpu_cc_exact
    flash = bool(ctx.text.containing(("flash_attn", "flash-attn", "flash-attention")))
    # flash-attn's setup.py asks more of nvcc than the arch itself (sm_80 from 11.7, its floor)
    own = next((nvcc for arch, nvcc in newest.build_archs.items()
                if arch.removeprefix("sm_") == digits), None) if flash else None
    need = own or FIRST_NVCC.get(digits)
    if need and hit[1].group(2) == "f":  # a known arch's family target: from CUDA 12.9 on
        need = max(need, FAMILY_NVCC, key=Version)
    target = f"sm_{digits}{hit[1].group(2)}"
    # an nvcc the report states that is new enough is not the one that ran
    ran = ctx.nvcc if ctx.nvcc and not (need and ctx.nvcc >= Version(need)) else None
    # flash-attn's setup.py reads its own variable; torch's extension builder reads
    # TORCH_CUDA_ARCH_LIST (cpp_extension._get_cuda_arch_flags) for every other package
    setting = (f"{newest.arch_env}={cc.major}{cc.minor}" if flash and newest.arch_env else
               f"TORCH_CUDA_ARCH_LIST={cc.major}.{cc.minor}") if cc is not None else ""
    narrow = (f" or build only for this GPU ({setting}; a package that hard-codes its "
              f"-gencode list needs {target} removed from it)" if setting else
              f", or remove {target} from the architectures the build compiles for "
              "(TORCH_CUDA_ARCH_LIST, or the -gencode flags a package hard-codes)")
    return [Signal("nvcc_arch", Category.BUILD_TOOLCHAIN,
                   f"this nvcc{f' ({ran})' if ran else ''} cannot compile for {target}"
                   + (f", which needs nvcc {need} or newer" if need else ""),
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("nvcc")]), NAMED,
                   [Remedy(summary=(f"Upgrade CUDA: a toolkit >= {need}" if need else
                            f"Upgrade CUDA to a toolkit whose nvcc knows {target} (`nvcc "
                            "--list-gpu-arch` lists the ones it knows)") + f"{narrow}.",
                           commands=[f"export {setting}"] if setting else []),
                    *_distro_nvcc(ctx), *([prebuilt(ctx)] if flash else [])])]


def _distro_nvcc(ctx: Context) -> List[Remedy]:
    """The nvcc that failed is /usr/bin/nvcc: a Linux distribution's CUDA package
    (nvidia-cuda-toolkit), found on PATH before the toolkit NVIDIA's installer puts under
    /usr/local/cuda."""
    if not ctx.text.containing(("/usr/bin/nvcc",)):
        return []
    return [Remedy(summary="The nvcc that ran is /usr/bin/nvcc, a Linux distribution's CUDA "
                   "package, usually older than the toolkit the report names: install CUDA from "
                   "NVIDIA's installer (or remove the distribution's nvidia-cuda-toolkit), put "
                   "its bin (/usr/local/cuda/bin) first on PATH and point CUDA_HOME at it, then "
                   "build again: `which nvcc` must print that one.",
                   commands=["export CUDA_HOME=/usr/local/cuda", "which nvcc",
                             "nvcc --version"])]


def _dropped_arch(ctx: Context, index: int, digits: str, major: int) -> Signal:
    """An arch older than the toolkit compiles for (compute_30 under CUDA 11): the build's own
    list names it, and a newer toolkit will not bring it back."""
    cc = ctx.gpu_cc_exact
    mine = f" ({ctx.gpu[0]}: {cc.major}.{cc.minor})" if cc is not None and ctx.gpu else ""
    return Signal("nvcc_arch", Category.BUILD_TOOLCHAIN,
                  f"the build asks for sm_{digits}, which CUDA {major} and later no longer compile "
                  f"for: the project's architecture list is older than this toolkit",
                  dedupe([ctx.quote(index), *ctx.quotes("nvcc")]), NAMED,
                  [Remedy(summary=f"Remove sm_{digits} / compute_{digits} from the build's "
                          "architecture list (its CMakeLists.txt CUDA flags or "
                          "CMAKE_CUDA_ARCHITECTURES, its setup.py -gencode flags, or "
                          f"TORCH_CUDA_ARCH_LIST) and build for this GPU's arch instead{mine}; "
                          f"for a GPU of sm_{digits} itself, a CUDA toolkit older than {major}.0 "
                          "is needed.",
                          commands=[f"export TORCH_CUDA_ARCH_LIST={cc.major}.{cc.minor}"]
                          if cc is not None else [])])
