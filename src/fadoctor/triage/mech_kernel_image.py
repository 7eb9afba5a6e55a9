"""A CUDA binary whose kernels the GPU cannot use: an image the driver cannot load
(cudaErrorInvalidKernelImage: the driver-floor defects), and a GPU whose arch no flash-attn
release's wheels carry (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.archs import arch_runs_on
from fadoctor.install.torch import torch_install
from fadoctor.install.wheels import first_release_with_kernels
from fadoctor.matrix.defects import Defect
from fadoctor.report import Category, Remedy, Severity
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.signal import FAILED, FAILED_NEEDLES, HINTED, LOGGED, NAMED, Signal, dedupe
from fadoctor.triage.text import Quote
from fadoctor.triage.torch_archs import build_for_cuda


def _gpu_words(ctx: Context, cc: Version) -> str:
    return f"{ctx.gpu[0]} (sm_{cc.major}{cc.minor})" if ctx.gpu else f"sm_{cc.major}{cc.minor}"


def invalid_image(ctx: Context, quotes: List[Quote]) -> Optional[Signal]:
    """cudaErrorInvalidKernelImage: the binary has an image this driver cannot load (compressed
    in a mode it does not know, or from a newer toolkit), not a missing arch. A known defect of
    the stated flash-attn with a driver floor that the stated driver does not clear names it.
    Triton's own ("Triton Error [CUDA]: device kernel image is invalid") is a cubin it compiled
    or cached: for another GPU (a cache shared between machines) or by a ptxas newer than the
    driver."""
    floor = ctx.matrix.driver_floor(12)
    triton = any("triton error" in q.text.lower() for q in quotes) or (
        "triton" in " ".join(q.text.lower() for q in quotes) or bool(ctx.text.containing(("triton",))))
    # a CUDA below 12 stated where no torch is (with a torch, it is more likely torch's own)
    stated_cuda = parse_version(ctx.seen.get(o.CUDA))
    old_cuda = stated_cuda is not None and stated_cuda.major < 12 and ctx.torch is None \
        and not ctx.text.containing(("flash",))
    if triton and floor is not None and ((ctx.driver is not None and ctx.driver < floor.min_driver)
                                         or (ctx.driver is None and old_cuda)):
        # Triton assembles its kernels with its bundled ptxas, a CUDA 12 toolkit's: a driver
        # below CUDA 12's floor cannot load what it makes
        return Signal("no_kernel_image", Category.DRIVER_TOO_OLD,
                      f"Triton assembled this kernel with its bundled CUDA 12 ptxas, and the "
                      f"driver here ({ctx.driver or f'of CUDA {stated_cuda}'}) is older than "
                      f"CUDA 12 needs ({floor.min_driver}), so it cannot load the binary",
                      dedupe([*quotes, *ctx.quotes("driver")]), NAMED,
                      [Remedy(summary=f"Upgrade the NVIDIA driver to {floor.min_driver} or newer."),
                       Remedy(summary="Or, where this Triton still accepts an older ptxas, point "
                              "it at a toolkit of the driver's CUDA (TRITON_PTXAS_PATH="
                              "/usr/local/cuda-11.8/bin/ptxas).")],
                      details={"source": floor.source})
    if any("triton error" in q.text.lower() for q in quotes):
        return Signal("no_kernel_image", Category.NO_KERNEL_IMAGE,
                      "Triton loaded a kernel binary this GPU and driver cannot run: one cached "
                      "from another GPU (a Triton cache shared between machines) or assembled by "
                      "a ptxas newer than the driver", quotes, LOGGED,
                      [Remedy(summary="Clear Triton's cache (by default ~/.triton/cache), or "
                              "give each machine its own with TRITON_CACHE_DIR, so the kernels "
                              "are compiled again for this GPU.",
                              commands=["export TRITON_CACHE_DIR=/tmp/triton-cache"]),
                       Remedy(summary="If TRITON_PTXAS_PATH points at a toolkit newer than the "
                              "driver, unset it (Triton's bundled ptxas) or upgrade the driver; "
                              "or upgrade Triton (with the torch that pins it).")])
    if ctx.fa2 is None:
        return _invalid_image_unstated(ctx, quotes)
    for defect in ctx.matrix.defects_for(ctx.fa2):
        if defect.min_driver is None or defect.matches(driver=ctx.driver) is False:
            continue
        stated = ctx.fa_quote()
        return Signal("no_kernel_image", Category.DRIVER_TOO_OLD,
                      f"flash-attn {ctx.fa2}'s kernels need NVIDIA driver {defect.min_driver} or "
                      f"newer to load ({defect.id}); the driver here is "
                      f"{ctx.driver or 'not stated, and older drivers fail exactly so'}",
                      dedupe([*quotes, *([stated] if stated else [])]), NAMED,
                      [Remedy(summary=f"{defect.summary} {defect.remedy}",
                              commands=[f'pip install "flash-attn=={after}" --no-build-isolation'
                                        for after in _unaffected_after(ctx, defect)])],
                      details={"source": defect.source},
                      needs=[] if ctx.driver else [("the driver version", "nvidia-smi")])
    return None


def _invalid_image_unstated(ctx: Context, quotes: List[Quote]) -> Optional[Signal]:
    """The flash-attn release is not stated: the known defects whose kernels need a newer
    driver to load are the candidates, each with its fix."""
    floors = [d for d in ctx.matrix.known_defects if d.min_driver is not None
              and d.matches(driver=ctx.driver) is not False]
    if not floors:
        return None
    return Signal("no_kernel_image", Category.DRIVER_TOO_OLD,
                  "the CUDA binary's kernels are in a form this NVIDIA driver cannot load "
                  "(cudaErrorInvalidKernelImage: built by a newer toolkit, or compressed in a mode "
                  "the driver does not know), not a missing architecture",
                  dedupe([*quotes, *ctx.quotes("driver")]), LOGGED,
                  [Remedy(summary="Upgrade the NVIDIA driver, or:"),
                   *(Remedy(summary=f"If the flash-attn installed is {d.versions}: {d.summary} "
                            f"{d.remedy} (needs driver {d.min_driver} or newer; {d.id})")
                     for d in floors)],
                  details={"source": "; ".join(d.source for d in floors)},
                  needs=[("the driver and the flash-attn version",
                          "nvidia-smi; pip show flash-attn")])


def _unaffected_after(ctx: Context, defect: Defect) -> List[str]:
    """The first release after the stated one that the defect spares (none if none is known)."""
    later = sorted(rel.version for rel in ctx.matrix.flash_attn_releases
                   if ctx.fa2 is not None and rel.version > ctx.fa2
                   and not rel.version.is_prerelease and not defect.affects(rel.version))
    return [str(later[0])] if later else []


_CUDA_FAILED = ("torch_use_cuda_dsa", "cuda error", "cuda kernel errors")


def no_release_kernels(ctx: Context) -> List[Signal]:
    """A CUDA error (its TORCH_USE_CUDA_DSA hint) with flash-attn on a GPU whose arch no
    flash-attn release's wheels carry kernels for (the matrix's archs per release): the wheel
    cannot run there, whatever it was built for; only a build for this arch can."""
    cc, fa2 = ctx.gpu_cc_exact, ctx.fa2
    if cc is None or fa2 is None or ctx.amd or cc < Version("8.0"):
        return []
    hit = ctx.text.containing(_CUDA_FAILED)
    if not hit:
        return []
    first = first_release_with_kernels(ctx.matrix, cc)
    if first is not None and first.version <= fa2:
        return []
    arch = f"{cc.major}{cc.minor}"
    target = (cc.major, cc.minor)
    builds = any(arch_runs_on(a, target) for rel in ctx.matrix.flash_attn_releases
                 for a in rel.build_archs)
    if not builds:
        # no release's setup.py emits a -gencode for it (v2.8.3:setup.py:179-191: sm_80, 90, 100,
        # 120); the main branch's add_cuda_gencodes adds 110 (Thor) (flash_attn_facts.md §1.4)
        fixes = [Remedy(summary=f"No flash-attn release's setup.py compiles for sm_{arch} (v2.8.3 "
                        "emits sm_80/90/100/120 only), so a source build of a release has no "
                        f"kernels for it either; flash-attention's main branch adds {arch} "
                        "(add_cuda_gencodes): build that on this machine.",
                        commands=[f"MAX_JOBS={ctx.build_jobs} FLASH_ATTN_CUDA_ARCHS={arch} pip "
                                  "install --no-build-isolation "
                                  '"git+https://github.com/Dao-AILab/flash-attention.git"']),
                 r.sdpa("Meanwhile:")]
    else:
        fixes = r.keep([r.force_build(ctx, f"Build flash-attn from source for sm_{arch} on this "
                                           "machine:"), r.sdpa("Meanwhile:")])
    return [Signal("no_kernel_image", Category.NO_KERNEL_IMAGE,
                   f"no flash-attn release's prebuilt wheels carry kernels for {_gpu_words(ctx, cc)}; "
                   f"flash-attn {ctx.fa2} fails there with a CUDA error",
                   dedupe([ctx.quote(hit[0]), ctx.gpu[2], *([q] if (q := ctx.fa_quote()) else [])])
                   if ctx.gpu else [ctx.quote(hit[0])], HINTED, fixes,
                   details={"source": "the matrix's flash_attn_releases archs"})]


# CUDA 13.0 removed offline compilation and library support for Maxwell, Pascal and Volta
# (compute capability below 7.5): NVIDIA CUDA Toolkit 13.0 release notes (shared reference
# torch_cuda_facts.md §2). A binary, wheel or image built with CUDA 13 has no code for them.
_CUDA13 = re.compile(r"\bcu13\d\b|\bcuda[-_ ]?13(?:\.\d{1,2})?\b|\bCUDA Version: 13\.", re.I)
_CUDA13_FLOOR = Version("7.5")


def cuda13_old_gpu(ctx: Context) -> List[Signal]:
    """A GPU below sm_75 running something built with CUDA 13, which cannot target it."""
    cc = ctx.gpu_cc_exact
    if ctx.gpu is None or cc is None or cc >= _CUDA13_FLOOR or ctx.amd:
        return []
    built = next(((i, m) for i, m in ctx.find(_CUDA13, ("cu13", "cuda")) if "CUDA Version"
                  not in m.group(0)), None)  # nvidia-smi's driver CUDA is not a build
    failed = ctx.first(FAILED, FAILED_NEEDLES)
    if built is None or failed is None:
        return []
    return [Signal("cuda13_old_gpu", Category.NO_KERNEL_IMAGE,
                   f"this build uses CUDA 13, which dropped {_gpu_words(ctx, cc)}: CUDA 13 "
                   "compiles nothing for compute capability below 7.5 (Maxwell, Pascal, Volta), "
                   "so its binaries have no code for this GPU",
                   dedupe([ctx.quote(built[0]), ctx.gpu[2], ctx.quote(failed[0])]), HINTED,
                   [Remedy(summary="Use the CUDA 12 build instead (the container image's cuda12 "
                           "tag; a cu126 or cu128 torch; wheels built with CUDA 12): CUDA 12.x "
                           "still compiles for this GPU, and the driver runs it.",
                           commands=["fadoctor fix --print-pins"])],
                   details={"source": "NVIDIA CUDA Toolkit 13.0 release notes (Maxwell, Pascal "
                                      "and Volta support removed)"})]


# torch's older capability check (torch/cuda/__init__.py _check_capability before the
# DEVICE_REQUIREMENT table): "Found GPU0 NVIDIA GB10 which is of cuda capability 12.1. Minimum and
# Maximum cuda capability supported by this version of PyTorch is (8.0) - (12.0)". It compares
# against the highest arch built, but SASS for sm_XY runs on any sm_XZ with Z >= Y of the same
# major (CUDA C++ Programming Guide, Binary Compatibility): a GPU past the maximum in the same
# major runs the build's kernels, and the warning is spurious.
_RANGE = re.compile(r"which is of cuda capability (\d{1,2})\.(\d)\.?\s+Minimum and Maximum cuda "
                    r"capability supported by this version of PyTorch is\s+\((\d{1,2})\.(\d)\)\s*-"
                    r"\s*\((\d{1,2})\.(\d)\)", re.I)


def capability_range(ctx: Context) -> List[Signal]:
    hit = ctx.first(_RANGE, ("minimum and maximum cuda capability",))
    if hit is None:  # the warning printed over several lines (warnings' own wrapping)
        for index in ctx.text.containing(("which is of cuda capability",)):
            joined = " ".join(line.strip() for line in ctx.text.lines[index:index + 4])
            found = _RANGE.search(joined)
            if found is not None:
                hit = (index, found)
                break
    if hit is None:
        return []
    major, minor, _, _, top_major, top_minor = (int(g) for g in hit[1].groups())
    if major != top_major or minor <= top_minor:
        return []
    return [Signal("capability_range", Category.INFO,
                   f"torch warns that compute capability {major}.{minor} is outside its range "
                   f"(up to {top_major}.{top_minor}), but it is the same major: its sm_"
                   f"{top_major}{top_minor} kernels (SASS) run on sm_{major}{minor}, so this "
                   "warning is harmless (newer torch releases check binary compatibility instead)",
                   [ctx.quote(hit[0])], HINTED, [Remedy(summary="Nothing to fix: the warning can be "
                                                       "ignored. Confirm with a CUDA op, e.g. "
                                                       "torch.ones(1, device='cuda') * 2.",
                                                       commands=['python -c "import torch; '
                                                                 "print(torch.ones(1, device='cuda') "
                                                                 '* 2)"'])],
                   severity=Severity.INFO,
                   details={"source": "NVIDIA CUDA C++ Programming Guide, Binary Compatibility; "
                                      "torch/cuda/__init__.py _check_capability"})]


# The first CUDA toolkit whose nvcc targets each architecture: Volta sm_70 with CUDA 9.0, Turing
# sm_75 with 10.0, Ampere sm_80 with 11.0 and sm_86 with 11.1, Ada sm_89 and Hopper sm_90 with
# 11.8, Blackwell sm_100/sm_120 with 12.8 (NVIDIA's CUDA toolkit release notes; flash-attention's
# setup.py gates sm_90 on nvcc 11.8 and sm_100/sm_120 on 12.8, flash_attn_facts.md §1.3)
FIRST_CUDA = {Version("7.0"): Version("9.0"), Version("7.5"): Version("10.0"),
              Version("8.0"): Version("11.0"), Version("8.6"): Version("11.1"),
              Version("8.9"): Version("11.8"), Version("9.0"): Version("11.8"),
              Version("10.0"): Version("12.8"), Version("12.0"): Version("12.8")}
# cuDNN's and cuBLAS's statuses for code that does not run on the GPU
_STATUS = (r"CUDNN_STATUS_EXECUTION_FAILED|CUBLAS_STATUS_EXECUTION_FAILED|CUDNN_STATUS_ARCH_MISMATCH|"
           r"CUBLAS_STATUS_ARCH_MISMATCH")
_STATUS_FAILED = re.compile(_STATUS)
_RUNTIME_FAILED = re.compile(_STATUS + r"|no kernel image is available|invalid device function")


def cuda_predates_gpu(ctx: Context) -> List[Signal]:
    """The CUDA the report's stack was built with (torch's, or the toolkit it states) predates
    the GPU's architecture, and a CUDA library failed on it: nothing built with that CUDA has code
    for the GPU."""
    cc = ctx.gpu_cc_exact
    if ctx.gpu is None:
        return _cuda_10_unnamed_gpu(ctx)
    if cc is None or cc not in FIRST_CUDA:
        return []
    stated = ctx.torch_cuda or parse_version(ctx.seen.get(o.CUDA) or "")
    first = FIRST_CUDA[cc]
    # a cubin runs on later minors of its major (sm_80 code on sm_86 and sm_89): a CUDA that knew
    # the GPU's major runs it, unless the GPU came with a later CUDA major (Turing with 10.0)
    major_first = FIRST_CUDA.get(Version(f"{cc.major}.0"), first)
    if stated is None or stated >= first or (stated.major >= first.major and stated >= major_first):
        return []
    failed = ctx.first(_RUNTIME_FAILED, ("status_", "kernel image", "invalid device function"))
    if failed is None:
        return []
    name = ctx.gpu[0]
    return [Signal("cuda_predates_gpu", Category.NO_KERNEL_IMAGE,
                   f"CUDA {stated} predates {name} (sm_{cc.major}{cc.minor}, first targeted by "
                   f"CUDA {first}): torch, cuDNN and cuBLAS built with it were not made for this "
                   "GPU",
                   dedupe([ctx.quote(failed[0]), ctx.gpu[2], *ctx.quotes(o.CUDA, "torch")]),
                   NAMED - 5,
                   [Remedy(summary=f"Install a torch built for CUDA {first} or newer (its +cuXY "
                           f"wheel, or conda's cudatoolkit {first}+, with the cuDNN built for it), "
                           "and a driver that runs that CUDA.")],
                   details={"first_cuda": str(first)})]


def _cuda_10_unnamed_gpu(ctx: Context) -> List[Signal]:
    """A cuDNN or cuBLAS execution failure under a stack built with CUDA 10 or older, the GPU
    unnamed: on an Ampere or newer GPU (the RTX 30 series came with CUDA 11.0 and 11.1) nothing
    built with that CUDA has its code, the usual cause then; a guess until the GPU is known."""
    stated = ctx.torch_cuda or parse_version(ctx.seen.get(o.CUDA) or "")
    if stated is None or stated.major > 10:
        return []
    failed = ctx.first(_STATUS_FAILED, ("status_",))
    if failed is None:
        return []
    build = build_for_cuda(ctx, "11.0") if ctx.torch is not None and ctx.torch.major == 1 else None
    return [Signal("cuda_predates_gpu", Category.NO_KERNEL_IMAGE,
                   f"a CUDA library failed to execute under a stack built with CUDA {stated}: on "
                   "an Ampere or newer GPU (RTX 30 series, A100; first targeted by CUDA 11.0 and "
                   "11.1) nothing built with that CUDA has code for it",
                   dedupe([ctx.quote(failed[0]), *ctx.quotes(o.CUDA, "torch")]), NAMED - 15,
                   r.keep([Remedy(summary="If the GPU is Ampere or newer, install a torch built "
                                  "for CUDA 11.0 or newer (its +cu11x wheel, or conda's "
                                  "cudatoolkit 11.x), with the cuDNN built for it"
                                  + (f": torch {build[0]} built for {build[1]}" if build else "")
                                  + ".", commands=[torch_install(*build)] if build else []),
                           Remedy(summary="The GPU model and compute capability:",
                                  commands=[r.REVEAL_GPU])]),
                   details={"first_cuda": "11.0"})]



# A package that builds one extension per compute capability and picks the GPU's at import:
# tiny-cuda-nn's torch bindings (bindings/torch/tinycudann/modules.py: "Could not find compatible
# tinycudann extension for compute capability {cc}."), built for the archs of TCNN_CUDA_ARCHITECTURES
# (its README), else those of the GPUs seen at build time
_PER_ARCH = re.compile(r"Could not find compatible (\w{1,40}) extension for compute capability (\d{2,3})")


def per_arch_extension(ctx: Context) -> List[Signal]:
    hit = ctx.first(_PER_ARCH, ("could not find compatible",))
    if hit is None:
        return []
    package, cc = hit[1].group(1), hit[1].group(2)
    tcnn = package == "tinycudann"
    variable = "TCNN_CUDA_ARCHITECTURES" if tcnn else "TORCH_CUDA_ARCH_LIST"
    value = cc if tcnn else f"{cc[:-1]}.{cc[-1]}"
    return [Signal("per_arch_extension", Category.NO_KERNEL_IMAGE,
                   f"{package} was built with no extension for compute capability {cc} (this "
                   "GPU): it builds one per arch, for the archs it was given or saw at build time",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Rebuild {package} on this machine with {variable}={value} set "
                           "(from its source; a build elsewhere targets that machine's GPU).",
                           commands=[f"export {variable}={value}"])])]
