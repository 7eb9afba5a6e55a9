"""Remedies for triage, built from the stated facts over the matrix and the solver: the exact
wheel, the release that fits, the build recipe narrowed to the reporter's machine (pure)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import List, Optional

from packaging.version import Version

from fadoctor.archs import arch_name, arch_runs_on
from fadoctor.checks.remedies import TRANSFORMERS_SDPA, remedy, sdpa_fallback
from fadoctor.install.torch import TorchBuild, extra_index_args, torch_install
from fadoctor.install.wheels import build_recipe, newest_release_with_wheel, newest_wheel
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env, name, requirement
from fadoctor.triage import ext_torch
from fadoctor.triage.context import Context, parse_version

WHEELS_PAGE = "https://github.com/Dao-AILab/flash-attention/releases"
REVEAL_IMPORT = 'python -c "import flash_attn, flash_attn_2_cuda"'
REVEAL_TORCH = ('python -c "import torch; print(torch.__version__, torch.version.cuda, '
                'torch._C._GLIBCXX_USE_CXX11_ABI)"')
REVEAL_GPU = "nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv"


def torch_build(ctx: Context) -> Optional[TorchBuild]:
    if ctx.torch is None or ctx.torch_variant is None or ctx.torch_abi is None:
        return None
    return TorchBuild(Version(ctx.torch.base_version), ctx.torch_variant, ctx.torch_abi,
                      installed=True)


def exact_wheel(ctx: Context, replace_installed: bool = True,
                glibc_below: Optional[Version] = None) -> Optional[Remedy]:
    """The newest flash-attn 2.x wheel compiled for the stated torch build that the stated
    machine loads: what `fadoctor fix --keep-torch` prints."""
    build = torch_build(ctx)
    if build is None or ctx.torch is None:
        return None
    machine = ctx.machine()
    if glibc_below is not None:
        machine = replace(machine, glibc=Version(f"{glibc_below.major}.{glibc_below.minor - 1}"))
    wheel = newest_wheel(build, machine, ctx.matrix)
    if wheel is None:
        return None
    caveat = wheel.caveat(ctx.torch)
    python = "" if ctx.python else (" The file name's cpXY must be your Python's tag: the report "
                                    "does not say which Python runs.")
    return Remedy(
        summary=f"Install flash-attn {wheel.release.version} from its prebuilt wheel compiled for "
                f"{build} (C++11 ABI {int(build.cxx11_abi)})"
                + (f"; it was {caveat}." if caveat else ". --no-deps: the wheel does not pin torch "
                   "and could pull another one.") + python,
        commands=[*(["pip uninstall -y flash-attn"] if replace_installed else []),
                  f'pip install --no-deps "{wheel.url}"', "pip install einops"])


def no_flash_gpu(ctx: Context) -> Optional[Remedy]:
    """On a GPU older than Ampere no flash-attn 2.x kernel runs, so mending its binary gains
    nothing: take it out, and the model code falls back to SDPA or eager."""
    gpu, cc = ctx.gpu, ctx.gpu_cc
    if gpu is None or cc is None or cc >= Version("8.0") or ctx.amd:
        return None
    return Remedy(summary=f"The {gpu[0]} (compute capability {cc}) cannot run FlashAttention-2 "
                  "at all (Ampere or newer): uninstall flash-attn so the model code falls back to "
                  "SDPA or eager attention.", commands=["pip uninstall -y flash-attn"])


def reinstall(ctx: Context, why: str = "") -> Remedy:
    version = f"=={ctx.fa2}" if ctx.fa2 is not None and ctx.fa2_exact else ""
    return Remedy(
        summary=(f"{why} Reinstall flash-attn{version.replace('==', ' ')} for the torch that is "
                 "installed now: its setup.py fetches the prebuilt wheel for this torch, CUDA and "
                 "C++ ABI, or compiles one. --no-cache-dir keeps pip from reusing a wheel built "
                 "for another torch.").strip(),
        commands=["pip uninstall -y flash-attn",
                  f"pip install flash-attn{version} --no-build-isolation --no-cache-dir"])


def force_build(ctx: Context, why: str) -> Remedy:
    """Compile here, against this torch, CUDA and glibc (FLASH_ATTENTION_FORCE_BUILD skips the
    prebuilt-wheel download in setup.py)."""
    build = torch_build(ctx)
    version = ctx.fa2 if ctx.fa2 is not None and ctx.fa2_exact else None
    if build is not None:
        rel, commands = build_recipe(build, ctx.machine(), ctx.matrix, version)
        if rel is not None:
            return Remedy(summary=f"{why} Build flash-attn {rel.version} from source against "
                          "this torch: FLASH_ATTENTION_FORCE_BUILD=TRUE makes setup.py compile "
                          "instead of fetching a wheel; MAX_JOBS is sized to the machine's memory "
                          "(about 5 GB per nvcc job).", commands=commands)
    jobs = ctx.build_jobs
    pin = f"=={version}" if version is not None else ""
    return Remedy(summary=f"{why} Build flash-attn from source against this torch: "
                  "FLASH_ATTENTION_FORCE_BUILD=TRUE makes setup.py compile instead of fetching a "
                  "wheel (it needs nvcc of torch's CUDA major and ninja).",
                  commands=["pip install ninja packaging",
                            f"MAX_JOBS={jobs} FLASH_ATTENTION_FORCE_BUILD=TRUE pip install "
                            f"flash-attn{pin} --no-build-isolation --no-cache-dir"])


def newest_wheel_release(ctx: Context) -> Optional[str]:
    """The newest FA2 release with wheels for the stated torch minor (any CUDA and ABI)."""
    found = newest_release_with_wheel(ctx.matrix, ctx.torch) if ctx.torch is not None else None
    return str(found.version) if found is not None else None


def torch_for_cuda(ctx: Context, cuda_major: int, at_most: Optional[Version] = None
                   ) -> Optional[Remedy]:
    """A torch build for this CUDA major (no newer than `at_most`, the nvcc that will build
    against it): the stated release if it has one, else the nearest newer one, else the newest."""
    releases = sorted(ctx.matrix.torch_releases, key=lambda r: Version(r.minor))
    if ctx.torch is not None:
        here = Version(f"{ctx.torch.major}.{ctx.torch.minor}")
        releases = [r for r in releases if Version(r.minor) >= here] + \
            [r for r in reversed(releases) if Version(r.minor) < here]
    else:
        releases.reverse()
    cc = ctx.gpu_cc_exact
    for rel in releases:
        variants = [v for v in rel.cuda_variants if v[2:-1] == str(cuda_major)
                    and (at_most is None or Version(f"{v[2:-1]}.{v[-1]}") <= at_most)
                    and (cc is None or _runs(rel.arch_lists.get(v), cc))]
        if variants:
            variant = max(variants, key=lambda v: int(v[2:]))
            version = ctx.torch.base_version if ctx.torch is not None and \
                rel.minor == f"{ctx.torch.major}.{ctx.torch.minor}" else rel.latest_patch
            return Remedy(summary=f"Install torch {version} built for CUDA {cuda_major} "
                          f"({variant}).", commands=[torch_install(version, variant)])
    return None


def _runs(archs: Optional[str], cc: Version) -> bool:
    """A variant's arch list runs on this GPU (an unknown list is taken as running)."""
    return archs is None or any(arch_runs_on(arch_name(a), (cc.major, cc.minor))
                                for a in archs.split(";"))


def known_defects(ctx: Context, *categories: Category) -> List[Remedy]:
    """The matrix's known defects of the stated flash-attn release that the stated facts do not
    rule out, with what to take instead."""
    if ctx.fa2 is None:
        return []
    out = []
    for defect in ctx.matrix.defects_for(ctx.fa2):
        if defect.category in categories and defect.matches(
                ctx.torch, ctx.gpu_cc_exact, ctx.driver, cxx11_abi=ctx.torch_abi, glibc=ctx.glibc,
                torch_cuda=ctx.torch_cuda) is not False:
            out.append(Remedy(summary=f"A known defect of flash-attn {defect.versions}: "
                              f"{defect.summary} {defect.remedy}"))
    return out


def rebuild_other(ctx: Context, owner: Optional[str], installed: Optional[str] = None
                  ) -> List[Remedy]:
    """An extension of another package (vLLM, xformers, torchvision...) built for another torch.
    The package's name comes from the report: its commands are built only from a valid name.
    Where the package index's metadata is known (ext_torch), the torch its stated release
    requires, and its release that requires the installed torch, come first."""
    stated = ctx.package(owner) if owner else None
    torch_now = installed or (str(ctx.torch) if ctx.torch else None)
    known = ext_torch.remedies(owner, stated.value if stated else None, torch_now) \
        if owner else []
    rest = _rebuild_other(ctx, owner, installed)
    if owner and torch_now and ext_torch.none_fit(owner, torch_now):
        rest = rest[1:]  # no release of it is built for this torch: a reinstall finds none
    return [*known, *_pyg_page(ctx, owner, torch_now), *rest]


# PyG's compiled companions publish their wheels on PyG's own wheel pages, one per torch minor
# and CUDA build, named torch-<major>.<minor>.0+<cuXYZ|cpu> (pyg-team/pytorch_geometric README,
# "Additional Libraries": pip install ... -f <PyG's wheel URL>/torch-${TORCH}+${CUDA}.html)
PYG = ("torch-scatter", "torch-sparse", "torch-cluster", "torch-spline-conv", "pyg-lib")


def _pyg_page(ctx: Context, owner: Optional[str], torch_now: Optional[str]) -> List[Remedy]:
    if owner not in PYG or not torch_now:
        return []
    version = parse_version(torch_now.split("+")[0])
    if version is None:
        return []
    local = torch_now.split("+", 1)[1] if "+" in torch_now else None
    cuda = ctx.torch_cuda_stated
    variant = local if local and re.fullmatch(r"cu\d{3}|cpu", local) else \
        f"cu{cuda.major}{cuda.minor}" if cuda is not None else None
    page = f"torch-{version.major}.{version.minor}.0+{variant or 'cuXYZ'}"
    return [Remedy(summary=f"Install {owner} from PyG's wheel page for the installed torch, {page}"
                   + ("" if variant else " (cuXYZ: torch.version.cuda, as cu118; cpu for a CPU "
                      "torch)")
                   + f": PyG builds its companions' wheels per torch minor and CUDA, and its "
                   f"installation page gives the `pip install {owner} -f ...{page}.html` line.")]


# The packages whose setup.py fetches its release's prebuilt wheel even when pip builds from
# source, unless its FORCE_BUILD variable is TRUE (flash-attn: FLASH_ATTENTION_FORCE_BUILD;
# causal-conv1d: CAUSAL_CONV1D_FORCE_BUILD; mamba-ssm: MAMBA_FORCE_BUILD; each setup.py's
# CachedWheelsCommand)
FORCE_BUILD = {"flash-attn": "FLASH_ATTENTION_FORCE_BUILD",
               "causal-conv1d": "CAUSAL_CONV1D_FORCE_BUILD", "mamba-ssm": "MAMBA_FORCE_BUILD"}


def source_build(package: str) -> str:
    """pip building `package` from source against the installed torch (its FORCE_BUILD variable
    set where its setup.py would fetch a prebuilt wheel instead)."""
    force = FORCE_BUILD.get(package)
    return command(*([env(force, "TRUE")] if force else []), "pip", "install",
                   "--no-build-isolation", "--no-binary", name(package), name(package))


def _rebuild_other(ctx: Context, owner: Optional[str], installed: Optional[str] = None
                   ) -> List[Remedy]:
    torch = f" {installed or ctx.torch}" if installed or ctx.torch else ""
    what = owner or "the package"
    reinstall = (f"{what}'s compiled extension was built for another torch than the "
                 f"installed{torch}: install the release of {what} built for this torch (its "
                 "requirements name the torch it was built with), or the torch it names.")
    build = f"Or rebuild {what}: build from source against this torch."
    if owner is None:  # the report does not say which package: no command to guess
        return [Remedy(summary=reinstall), Remedy(summary=build)]
    pinned = installed or (str(ctx.torch) if ctx.torch else None)
    if pinned is not None and "+" in pinned and not extra_index_args(pinned):
        pinned = None  # a source or vendor build (2.5.1+gita8d6afb): no index has it to pin
    if pinned is None:  # a bare reinstall would move torch to the newest release: no command
        # but pip check names the torch the installed release requires (its wheel pins it)
        pins = Remedy(summary=f"Or reinstall torch at the version {what}'s release requires: "
                      f"`pip check` prints \"{what} ... has requirement torch==X, but you have "
                      "torch Y\"; install that torch (and its matching torchvision/torchaudio).",
                      commands=[command("pip", "check")])
        return [Remedy(summary=reinstall), pins, remedy(build, lambda: [source_build(owner)])]
    # The release built for this torch: the resolver picks the one whose torch pin the installed
    # torch meets; --no-cache-dir keeps pip from reusing the wheel it has; torch never moves.
    # a local-version torch (2.2.0+cu121) is on PyTorch's index only: pin its public version and
    # add that index, so `==` matches the +variant build there
    return [remedy(reinstall, lambda: [command("pip", "install", "--upgrade", "--no-cache-dir",
                                               name(owner),
                                               requirement("torch", pinned.split("+")[0]),
                                               *extra_index_args(pinned))]),
            remedy(build, lambda: [source_build(owner)])]


def sdpa(reason: str) -> Remedy:
    return sdpa_fallback(reason)


# words that put an attention implementation in play: the flash-attention family, xFormers,
# SageAttention, a model's attn_implementation, SDPA itself, an attention head's size
_ATTENTION = ("flash", "xformers", "attn", "attention", "sdpa", "scaled_dot_product", "head_dim",
              "head_size", "head dim", "headdim")


def attention_in_play(ctx: Context) -> bool:
    return bool(ctx.text.holding(_ATTENTION, first=True))


def for_report(ctx: Context, message: str, remedies: List[Remedy]) -> List[Remedy]:
    """The remedies without the fallback to PyTorch SDPA where neither the report nor the
    finding (a flash-attn check the catalog knows) names an attention implementation (a CPU-only
    torch under an image tool, a GPU too old for torch): switching attention there changes
    nothing. A finding whose only remedy it is keeps it."""
    if attention_in_play(ctx) or any(word in message.lower() for word in _ATTENTION):
        return remedies
    kept = [x for x in remedies if x.code != TRANSFORMERS_SDPA]
    return kept or remedies


def keep(remedies: List[Optional[Remedy]]) -> List[Remedy]:
    return [r for r in remedies if r is not None]


def rebuilt_for(package: Optional[str], cc: Version, runnable: bool = True) -> List[Remedy]:
    """The named package (not flash-attn) with code for this GPU: a current wheel, or a build
    (the command only where the package's index name is known: `runnable`)."""
    if package is None or package == "flash-attn":
        return []
    arch = f"{cc.major}.{cc.minor}"
    return [Remedy(summary=f"Then {package} with sm_{cc.major}{cc.minor} code: upgrade {package} to its "
                   f"newest release (reinstall {package} so pip fetches its current wheel: newer "
                   f"wheels are built for more GPUs), or compile "
                   f"it from source for this GPU with TORCH_CUDA_ARCH_LIST={arch} (--no-deps keeps torch as "
                   "it is).",
                   commands=[command(env("TORCH_CUDA_ARCH_LIST", arch), "pip", "install",
                                     "--no-build-isolation", "--no-deps", "--no-cache-dir",
                                     "--no-binary", name(package), name(package))]
                   if runnable else [])]
