"""An attention-kernel library beside flash-attention (FlashMLA, FlashInfer, xFormers,
SageAttention) failing on a GPU its release has no kernels for, or on a head dim its kernels
refuse: the release's arch list (data/kernel_libraries.yaml, cited per row) against the GPU the
report names decides whether a later release, a build for this GPU, or another backend is the
fix (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Set, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env
from fadoctor.triage import ext_torch
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.gpus import GpuFinder
from fadoctor.triage.kernel_libs import (
    Library,
    Release,
    arch_list,
    builds_cover,
    covers,
    ever_builds,
    first_with,
    libraries,
    named_in,
    stated_version,
    wheels_cover,
)
from fadoctor.triage.signal import HINTED, LOGGED, NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

# The libraries' own words for a GPU they have no kernels for: xFormers' cutlass dispatch
# (attention_forward_generic.cu: TORCH_CHECK(kernel_launched, "cutlassF: no kernel found to
# launch!"), FlashInfer's floor (jit/core.py: "FlashInfer requires sm75+", from 0.3.0 "FlashInfer
# requires GPUs with sm75 or higher"), FlashMLA's checks (csrc/pybind.cpp: "Only SM90 and SM100 are
# supported", flash_mla_interface.py: "Unsupported device capability", "is only supported on
# SM90"; FlashInfer's trtllm-gen runner: "Unsupported architecture"), and Triton failing to
# compile a library's kernel for the GPU ("PassManager::run failed").
_OWN = re.compile(r"cutlass[FB]: no kernel found to launch|FlashInfer requires (?:sm75\+|GPUs with "
                  r"sm75)|Only SM90 and SM100 are supported|Unsupported device capability|"
                  r"only supported on SM90|PassManager::run failed|"
                  # FlashMLA's and FlashInfer's C++ checks: TORCH_CHECK(..., "Unsupported
                  # architecture"), "Unsupported GPU architecture"
                  r"Error: Unsupported (?:GPU )?architecture\b", re.I)
_OWN_NEEDLES = ("no kernel found to launch", "flashinfer requires", "only sm90",
                "unsupported device capability", "only supported on sm90", "passmanager::run",
                "unsupported architecture", "unsupported gpu architecture")
_FAILED = re.compile(r"\b(?:crash\w*|error|fail\w*|can'?t|cannot|not work\w*|doesn'?t work|"
                     r"unsupported|not supported)\b", re.I)
_WINDOW = 12  # lines of a traceback above an error that may name the library's files


def library_at(ctx: Context, index: int) -> Optional[Tuple[Library, int]]:
    """The library an error line names, or the lines nearest it (the traceback frames above,
    the reporter's words below), or the title."""
    near = sorted(range(max(0, index - _WINDOW), min(len(ctx.text.lines), index + _WINDOW + 1)),
                  key=lambda line: (abs(line - index), line > index))
    for line in (*near, 0):
        lib = named_in(ctx.text.lines[line])
        if lib is not None:
            return lib, line
    return None


def library_version(ctx: Context, lib: Library) -> Tuple[Optional[Version], Optional[Quote]]:
    for name in lib.names:
        stated = ctx.package(name)
        if stated is not None:
            try:
                return Version(stated.value), stated.quote
            except ValueError:
                break
    for index in ctx.text.containing(tuple(n for n in lib.names)):
        version = stated_version(ctx.text.lines[index], lib)
        if version is not None:
            return version, ctx.quote(index)
    return None, None


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def _gpu(ctx: Context, cc: Version) -> str:
    return f"{ctx.gpu[0]} (sm_{cc.major}{cc.minor})" if ctx.gpu else f"sm_{cc.major}{cc.minor}"


def verdict(ctx: Context, lib: Library, quotes: List[Quote], strength: int,
            stated_only: bool = False) -> Optional[Signal]:
    """What the library's releases say about the GPU the report names; None where the table
    cannot tell (the GPU unknown, its release's list not verified, or kernels for it present),
    and with `stated_only` where it would rest on the releases before one (the release not
    stated: prose naming the library is not evidence enough for that)."""
    cc = ctx.gpu_cc_exact
    version, stated = library_version(ctx, lib)
    quotes = dedupe([*quotes, *([ctx.gpu[2]] if ctx.gpu else []), *([stated] if stated else [])])
    source = {"source": "data/kernel_libraries.yaml"}
    if cc is None:
        if not lib.narrow:
            return None
        latest = lib.releases[-1]
        return Signal("kernel_library", Category.GPU_UNSUPPORTED,
                      f"{lib.display} has kernels for {arch_list(latest.builds or ())} only; on "
                      "any other GPU it fails so", quotes, strength,
                      [Remedy(summary=lib.instead + "."), r.sdpa("Or, for attention in PyTorch:")],
                      details={**source, "where": latest.where},
                      needs=[("the GPU model", r.REVEAL_GPU)])
    gpu = _gpu(ctx, cc)
    if ever_builds(lib, cc) is False:
        return Signal("kernel_library", Category.GPU_UNSUPPORTED,
                      f"no release of {lib.display} has kernels for {gpu}", quotes, strength,
                      [Remedy(summary=lib.instead + "."), r.sdpa("Or:")],
                      details={**source, "where": "; ".join(x.where for x in lib.releases)})
    release = lib.release(version)
    if release is not None:
        wheels, builds = wheels_cover(release, cc, ctx.torch_cuda), builds_cover(release, cc)
        if builds is False:
            later = first_with(lib, cc, wheels=False, after=version)
            built = release.builds or release.wheels
            return Signal("kernel_library", Category.GPU_UNSUPPORTED,
                          f"{lib.display} {version} has no kernels for {gpu} (it builds for "
                          f"{arch_list(built)})" if built else
                          f"{lib.display} {version}'s kernels are not usable on {gpu}", quotes,
                          strength, r.keep([_upgrade(lib, later, cc, ctx.torch),
                                            Remedy(summary=lib.instead + ".")]),
                          details={**source, "where": release.where})
        if wheels is False:
            later = first_with(lib, cc, wheels=True, after=version)
            return Signal("kernel_library", Category.NO_KERNEL_IMAGE,
                          f"{lib.display} {version}'s prebuilt wheels carry kernels for "
                          f"{arch_list(release.wheels or ())}, not {gpu}", quotes, strength,
                          r.keep([_upgrade(lib, later, cc, ctx.torch),
                                  _build(lib, version, f"{cc.major}.{cc.minor}")]),
                          details={**source, "where": release.where})
        return None
    first = first_with(lib, cc, wheels=True)
    if first is None or first is lib.releases[0] or lib.dated or stated_only:
        return None
    # the release is not stated: the releases before `first` carry no wheel kernels for it
    return Signal("kernel_library", Category.NO_KERNEL_IMAGE,
                  f"{_possessive(lib.display)} prebuilt wheels before {first.since} carry no "
                  f"kernels for {gpu}", quotes, min(strength, LOGGED),
                  r.keep([_upgrade(lib, first, cc, ctx.torch), _build(lib, None, f"{cc.major}.{cc.minor}")]),
                  details={**source, "where": first.where},
                  needs=[(f"the {lib.display} version",  # every name it was published under
                          "python -m pip list 2>/dev/null | grep -i -E '"
                          + "|".join(n for n in lib.names if " " not in n) + "'")])


def _upgrade(lib: Library, release: Optional[Release], cc: Version,
             torch: Optional[Version]) -> Optional[Remedy]:
    """The first release with kernels for the GPU; a command only where the package index holds
    that release (data/ext_torch.yaml lists xFormers' releases there; FlashInfer's early wheels
    and SageAttention 2 are not on it: their install guides say where they are)."""
    if release is None or lib.dated:
        return None
    cuda = next((f" (its wheels for CUDA {floor} or newer)" for floor, items in release.cuda
                 if any(covers(i, cc) for i in items)
                 and not any(covers(i, cc) for i in release.wheels or ())), "")
    summary = (f"{lib.display} {release.since} is the first release with kernels for "
               f"sm_{cc.major}{cc.minor}{cuda}: upgrade to it or later")
    if release.since not in ext_torch.table().get(lib.dist, {}):
        return Remedy(summary=f"{summary}, installed as its install guide says for this torch "
                      "(it is built from its repository or taken from its own wheel index).")
    since = Version(release.since)
    fits = [v for v, _ in ext_torch.releases_for(lib.dist, torch)] if torch is not None else []
    pin = next((v for v in reversed(fits) if v >= since), None)
    if pin is not None:  # the newest such release that requires the installed torch
        return Remedy(summary=f"{summary}: {lib.display} {pin} requires the installed torch "
                      f"{torch} (--no-deps keeps it).",
                      commands=[command("pip", "install", "--no-deps", f"{lib.dist}=={pin}")])
    return Remedy(summary=f"{summary}, with the torch its release requires (pip resolves both).",
                  commands=[command("pip", "install", f"{lib.dist}>={release.since}")])


def _build(lib: Library, version: Optional[Version], archs: str,
           why: str = "for this GPU only") -> Optional[Remedy]:
    """xFormers' own recipe (its README: pip install -v -U git+...xformers.git@<ref>) for the
    archs given, at the tag of the stated release (main, which wants the newest torch, only when
    none is stated); the others' builds are not one command."""
    if lib.key != "xformers":
        return None
    ref = f"v{version}" if version is not None else "main"
    return Remedy(summary=f"Or build {lib.display}{f' {version}' if version else ''} from "
                  f"source {why} "
                  f"(TORCH_CUDA_ARCH_LIST={archs})"
                  + ("" if version else "; with an older torch, put your release's tag "
                     "(@vX.Y.Z) in place of main") + ".",
                  commands=[command(env("TORCH_CUDA_ARCH_LIST", archs), "pip",
                                    "install", "-v", "--no-build-isolation", "--no-deps",
                                    f"git+https://github.com/facebookresearch/xformers.git@{ref}"
                                    "#egg=xformers")])


def own_words(ctx: Context) -> List[Signal]:
    """A library's own words for a GPU it has no kernels for, or a failure the report ties to a
    library (its error lines or its title) on a GPU the table says it lacks kernels for."""
    hit = ctx.first(_OWN, _OWN_NEEDLES)
    if hit is not None:
        found = library_at(ctx, hit[0])
        lib = found[0] if found else _by_words(hit[1].group(0))
        if lib is not None:
            signal = verdict(ctx, lib, [ctx.quote(hit[0])], NAMED)
            if signal is not None:
                return [signal]
    if ctx.gpu is None:
        return []
    names = tuple(n.lower() for lib in libraries().values() for n in lib.names)
    for index in ctx.text.containing(names):  # the libraries' names are rare: read those lines
        line = ctx.text.lines[index]
        lib = named_in(line) if _FAILED.search(line) else None
        if lib is not None:
            signal = verdict(ctx, lib, [ctx.quote(index)], LOGGED if index else HINTED,
                             stated_only=True)
            if signal is not None:
                return [signal]
    return _stated_release(ctx)


def _stated_release(ctx: Context) -> List[Signal]:
    """A failure the report states anywhere ("Can't run server on sm75" as its title) beside a
    library release it lists (an environment dump's "flashinfer: 0.1.1") that has no kernels for
    the GPU it names: that release is the likely cause, below any error message."""
    failed = ctx.first(_FAILED, ("error", "fail", "crash", "can", "not work", "doesn",
                                 "unsupported", "not supported"))
    if failed is None:
        return []
    for lib in libraries().values():
        version, _ = library_version(ctx, lib)
        if version is not None:
            signal = verdict(ctx, lib, [ctx.quote(failed[0])], HINTED, stated_only=True)
            if signal is not None:
                return [signal]
    return []


def _by_words(message: str) -> Optional[Library]:
    low = message.lower()
    key = ("xformers" if "cutlass" in low else "flashinfer" if "flashinfer" in low
           else "flashmla" if "sm90" in low or "capability" in low else None)
    return libraries().get(key) if key else None


# The guard every generated memory-efficient attention kernel carries, in xFormers and in
# PyTorch's copy (pytorch aten/src/ATen/native/transformers/cuda/mem_eff_attention/kernels/*.cu,
# "auto-generated. See generate_kernels.py"): printf("FATAL: kernel `fmha_cutlassB_..._sm80` is
# for sm80-sm121, but was built for sm%d\n", __CUDA_ARCH__ / 10) where the code that ran was
# compiled for an arch outside the kernel's range.
# xFormers' earlier guard (0.0.1x kernel_forward.h): printf("FATAL: this function is for sm%d, but
# was built for sm%d\n", int(ARCH), int(__CUDA_ARCH_OR_ZERO__)), __CUDA_ARCH__ itself (750)
_FATAL = re.compile(r"FATAL: kernel `?(\w{1,120})`? is for sm(\d{2,3})-sm(\d{2,3}), but was built "
                    r"for sm(\d{2,3})|FATAL: (this function) is for sm(\d{2,3}), but was built for "
                    r"sm(\d{2,4})")


def built_for_other(ctx: Context) -> List[Signal]:
    """The binary's code that ran was compiled for an arch below the kernel's range (a build
    without this GPU's arch: its PTX of an older arch was JIT-compiled), or above it (this
    release's kernels predate the GPU)."""
    hit = ctx.first(_FATAL, ("but was built for sm",))
    if hit is None:
        return []
    if hit[1].group(1):
        kernel, low, high, ran = hit[1].group(1), *(int(g) for g in hit[1].groups()[1:4])
    else:  # the earlier guard: one arch, and __CUDA_ARCH__ as is (750 is sm75)
        kernel, low, ran = hit[1].group(5), int(hit[1].group(6)), int(hit[1].group(7))
        high, ran = low, ran // 10 if ran >= 300 else ran
    xformers = libraries().get("xformers")
    owner = "xFormers" if ctx.text.containing(("xformer",)) else "PyTorch (memory-efficient SDPA)"
    if owner != "xFormers" and kernel == "this function" and ran < low:
        # the earlier guard, in xFormers and in torch 2.0's copy of its kernels: torch's own
        # wheels carry every arch, so a build for one GPU is most often a prebuilt xFormers
        owner = "xFormers"
    quotes = dedupe([ctx.quote(hit[0]), *(g.quote for g in ctx.seen.gpus)])
    if ran < low:
        archs = sorted(_every_cc(ctx), key=Version)
        if archs and all(Version(cc) < Version(f"{low // 10}.{low % 10}") for cc in archs):
            # the GPU that ran the kernel is not among those named: it is at least sm{low}
            archs.append(f"{low // 10}.{low % 10}")
        listed = " ".join(archs) if archs else None
        build = (_build(xformers, library_version(ctx, xformers)[0], listed,
                        "for every GPU it runs on")
                 if listed and owner == "xFormers" and xformers is not None else None)
        return [Signal("kernel_built_for", Category.NO_KERNEL_IMAGE,
                       f"{owner}'s binary has no code for this GPU: the kernel {kernel} needs "
                       + (f"sm{low}-sm{high}" if high != low else f"sm{low}")
                       + f", and the code that ran was compiled for sm{ran} (the build's arch "
                       "list lacks this GPU's arch)", quotes, NAMED,
                       r.keep([Remedy(summary=f"Rebuild {owner.split(' ')[0]} with "
                                      "TORCH_CUDA_ARCH_LIST naming every GPU it runs on"
                                      + (f" ({listed})" if listed else "") +
                                      "; a build on one machine compiles for that machine's "
                                      "GPUs only."), build, _without_xformers(owner)]),
                       details={"source": "the generated kernels' FATAL guard (xFormers and "
                                          "PyTorch mem_eff_attention/kernels)"})]
    return [Signal("kernel_built_for", Category.NO_KERNEL_IMAGE,
                   f"{owner}'s kernel {kernel} runs on sm{low}-sm{high}, and this GPU's code is "
                   f"sm{ran}: this release's kernels predate the GPU", quotes, NAMED,
                   [Remedy(summary=f"Upgrade {owner.split(' ')[0]} to a release whose kernels "
                           f"cover sm{ran} (PyTorch's generator later extended the sm80 kernels "
                           "to sm121)."),
                    r.sdpa("Meanwhile:")],
                   details={"source": "the generated kernels' FATAL guard"})]


def _without_xformers(owner: str) -> Optional[Remedy]:
    """A prebuilt xFormers made for other GPUs can go: the apps that take it fall back to
    PyTorch SDPA without it."""
    if owner != "xFormers":
        return None
    return Remedy(summary="Or uninstall this xFormers build: apps that use it when installed "
                  "fall back to PyTorch SDPA without it.",
                  commands=[command("python", "-m", "pip", "uninstall", "-y", "xformers")])


def _every_cc(ctx: Context) -> Set[str]:
    """The compute capability of every GPU the report names, several to a line ("four 2080s and
    four 3090s")."""
    finder = GpuFinder(ctx.matrix)
    out = set()
    for gpu in ctx.seen.gpus:
        for part in re.split(r",|;|\band\b|\bplus\b", gpu.quote.text):
            out |= {cc for _, cc in finder.names(part) if cc}
    return out
