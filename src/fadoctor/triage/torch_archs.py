"""Which torch builds carry code for a GPU, from the matrix's arch lists (read from the x86_64
wheels): whether the stated build lacks it, and the nearest build that has it (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.archs import FIRST_NVCC, arch_name, arch_runs_on
from fadoctor.install.torch import torch_install
from fadoctor.matrix.pytorch import TorchRelease
from fadoctor.report import Remedy
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context


def torch_with_arch(ctx: Context, cc: Version) -> List[Remedy]:
    """The nearest torch release from the stated one up with kernels for `cc`; with no torch
    stated, the newest, saying which release was the first."""
    releases = sorted(ctx.matrix.torch_releases, key=lambda rel: Version(rel.minor))
    built = [(rel, variant) for rel in releases for variant in rel.arch_lists
             if ctx.torch_variant in (None, variant)]
    if ctx.torch is not None and releases and ctx.torch < Version(releases[0].minor):
        # a torch older than every release the matrix lists: the oldest listed with the GPU's code
        first = next((rel for rel in releases if variants(rel, cc)), None)
        if first is not None:
            variant = max(variants(first, cc), key=lambda v: int(v[2:]))
            return [Remedy(summary=f"torch {ctx.torch} predates the releases whose arch lists "
                           f"are known here; torch {first.latest_patch} ({variant}) has kernels "
                           f"for sm_{cc.major}{cc.minor}: upgrade torch, then reinstall the "
                           "packages built for the old one.",
                           commands=[torch_install(first.latest_patch, variant)])]
    if all(variant in variants(rel, cc) for rel, variant in built):
        return []  # every torch build (of the stated CUDA) runs on this GPU: torch has its kernels
    first = next((rel for rel in releases if variants(rel, cc)), None)
    then = "flash-attn" if ctx.text.containing(("flash",)) else "the packages built for the old torch"
    stated = ctx.matrix.torch_release(ctx.torch) if ctx.torch else None
    if stated is not None:  # the nearest release from the stated one up: the smallest change
        releases = [rel for rel in releases if Version(rel.minor) >= Version(stated.minor)]
    else:
        releases.reverse()
    for rel in releases:
        fitting = variants(rel, cc)
        if fitting:
            variant = min(fitting, key=lambda v: int(v[2:]))  # the least driver it needs
            version = ctx.torch.base_version if rel is stated and ctx.torch else rel.latest_patch
            oldest = min(ctx.matrix.torch_releases, key=lambda rel: Version(rel.minor))
            # the matrix's oldest release is no first: older releases than it may have them
            since = (f" (torch {first.minor} was the first release with them, built for "
                     f"{', '.join(sorted(variants(first, cc)))})"
                     if stated is None and first is not None and first is not rel
                     and first is not oldest else "")
            floor = FIRST_NVCC.get(f"{cc.major}{cc.minor}")
            if stated is None and floor:  # older torch releases than the matrix lists have them
                since += (f"; any torch built for CUDA {floor} or newer can have them, and none "
                          f"built for an older CUDA does, whose nvcc cannot compile for "
                          f"sm_{cc.major}{cc.minor}")
            return [Remedy(summary=f"Install torch {version} built for {variant}, which has "
                           f"kernels for sm_{cc.major}{cc.minor}{since}; then reinstall "
                           f"{then} for it.", commands=[torch_install(version, variant)])]
    return []


def variants(rel: TorchRelease, cc: Version) -> List[str]:
    """The CUDA variants of a torch release whose arch list runs on `cc`."""
    return [v for v, archs in rel.arch_lists.items() if runs(archs, cc)]


def stated_variant(ctx: Context) -> Optional[str]:
    """The CUDA build of torch the report states (Context.torch_cuda_stated), or a build tag
    written apart from the version ("PyTorch 2.8.0 + cu129"); never PyPI's default."""
    cuda = ctx.torch_cuda_stated
    if cuda is not None:
        return f"cu{cuda.major}{cuda.minor}"
    release = ctx.matrix.torch_release(ctx.torch) if ctx.torch is not None else None
    if release is None or ctx.seen.get(o.TORCH_CUDA):
        return None
    tags = {f"cu{m.group(1)}" for i in ctx.text.containing(("cu1",))
            for m in _TAG.finditer(ctx.text.lines[i])} & set(release.cuda_variants)
    return tags.pop() if len(tags) == 1 else None


_TAG = re.compile(r"(?<![\w.])cu(1\d{2})\b")


def runs(archs: str, cc: Version) -> bool:
    """Whether a TORCH_CUDA_ARCH_LIST ("7.5;8.0;12.0+PTX") has code that runs on `cc`."""
    return any(arch_runs_on(arch_name(a), (cc.major, cc.minor)) for a in archs.split(";"))


def torch_lacks(ctx: Context, cc: Version) -> bool:
    """The stated torch build's arch list (from the matrix) has no code for this GPU; a release
    stated without its CUDA build is taken as PyPI's default build of it (what `pip install
    torch==X` gives; the finding says so)."""
    release = ctx.matrix.torch_release(ctx.torch) if ctx.torch is not None else None
    if release is None or not release.arch_lists or _arm_host(ctx):
        return False  # the arch lists are the x86_64 wheels'; aarch64 builds carry others
    archs = release.arch_lists.get(stated_variant(ctx) or release.default_variant)
    return archs is not None and not runs(archs, cc)


def _arm_host(ctx: Context) -> bool:
    """A Jetson or a Grace superchip (GB10, GH200, GB200, GB300), or a report that says aarch64."""
    name = ctx.gpu[0] if ctx.gpu else ""
    return name.startswith(("Jetson", "GB", "GH")) or bool(ctx.text.containing(
        ("aarch64", "arm64", "sbsa", "jetson", "tegra", "l4t")))


# The CUDA builds of torch 1.x's wheels (Linux and Windows), as PyTorch's previous-versions page
# lists them (pytorch/pytorch.github.io _get_started/previous-versions.md at 04862e3); the matrix
# starts at 2.0. A build compiles an arch only where its CUDA toolkit does: sm_80 from CUDA 11.0,
# sm_86 from 11.1 (NVIDIA's CUDA release notes).
_OLD_VARIANTS = {"1.5": ("cu92", "cu101", "cu102"), "1.6": ("cu92", "cu101", "cu102"),
                 "1.7": ("cu92", "cu101", "cu102", "cu110"), "1.8": ("cu101", "cu102", "cu111"),
                 "1.9": ("cu102", "cu111"), "1.10": ("cu102", "cu111"),
                 "1.11": ("cu102", "cu113"), "1.12": ("cu102", "cu113", "cu116"),
                 "1.13": ("cu116", "cu117")}
# the newest patch of each of those releases on the package index (`pip index versions torch`,
# 8 Dec 2026); the index's own wheel of 1.5 to 1.12 is the CUDA 10.2 build (torch/version.py of
# its 1.5.1, 1.10.2 and 1.12.1 manylinux wheels: cuda = '10.2')
_OLD_PATCH = {"1.5": "1.5.1", "1.6": "1.6.0", "1.7": "1.7.1", "1.8": "1.8.1", "1.9": "1.9.1",
              "1.10": "1.10.2", "1.11": "1.11.0", "1.12": "1.12.1", "1.13": "1.13.1"}
_TOOLKIT_FOR = {(8, 0): 110, (8, 6): 111, (8, 7): 114}


def index_default(ctx: Context) -> List[Remedy]:
    """torch 1.5 to 1.12 from the package index, no +cuXYZ stated: its Linux wheel there is the
    CUDA 10.2 build (above), whose nvcc compiles nothing for Ampere (sm_80 needs CUDA 11.0, sm_86
    11.1): on such a GPU, the same release built for its newest CUDA 11."""
    torch = ctx.torch
    if torch is None or torch.major != 1 or torch.local or ctx.seen.get(o.TORCH_CUDA):
        return []
    builds = _OLD_VARIANTS.get(f"{torch.major}.{torch.minor}", ())
    newer = [v for v in builds if int(v[2:]) >= 110]
    if "cu102" not in builds or not newer:
        return []
    variant = newer[-1]
    return [Remedy(summary=f"torch {torch.base_version} as the package index installs it is its "
                   "CUDA 10.2 build, which has no kernels for Ampere or newer GPUs (sm_80 and up "
                   f"need CUDA 11): on such a GPU install the same release built for {variant}.",
                   commands=[torch_install(torch.base_version, variant)])]


def build_for_cuda(ctx: Context, cuda: str) -> Optional[Tuple[str, str]]:
    """(release, variant) of a torch wheel built for exactly this CUDA ("11.0" -> cu110): the
    stated torch's release where it has that build, else the nearest newer one, else the newest
    older one (1.x from PyTorch's previous-versions page, 2.x from the matrix)."""
    variant = "cu" + cuda.replace(".", "")
    builds = {minor: _OLD_PATCH[minor] for minor, have in _OLD_VARIANTS.items() if variant in have}
    builds.update({rel.minor: rel.latest_patch for rel in ctx.matrix.torch_releases
                   if variant in rel.cuda_variants})
    if not builds:
        return None
    minors = sorted(builds, key=Version)
    here = Version(f"{ctx.torch.major}.{ctx.torch.minor}") if ctx.torch is not None else None
    newer = [m for m in minors if here is not None and Version(m) >= here]
    minor = newer[0] if newer else minors[-1]
    same = here is not None and Version(minor) == here
    return (ctx.torch.base_version if same and ctx.torch is not None else builds[minor]), variant


_TORCH_PROSE = re.compile(r"\bpy[Tt]orch\b[^\n]{0,30}?\bv?(1\.\d{1,2}\.\d{1,2})\b")


def same_release(ctx: Context, cc: Version) -> List[Remedy]:
    """A torch 1.x whose CUDA build predates the GPU: the same release built for a CUDA that
    compiles its arch, the smallest change."""
    torch = ctx.torch
    if torch is None:
        found = ctx.first(_TORCH_PROSE, ("torch",))
        torch = Version(found[1].group(1)) if found else None
    need = _TOOLKIT_FOR.get((cc.major, cc.minor))
    if torch is None or need is None or torch.major != 1:
        return []
    builds = [v for v in _OLD_VARIANTS.get(f"{torch.major}.{torch.minor}", ())
              if int(v[2:]) >= need]
    if not builds:
        return []
    variant = builds[0]
    return [Remedy(summary=f"torch {torch.base_version}'s build for an older CUDA has no "
                   f"sm_{cc.major}{cc.minor} code (the arch list the message prints): install "
                   f"the same release built for {variant}, whose CUDA compiles it, with the "
                   "matching torchvision/torchaudio builds; then reinstall the packages built "
                   "for the old one.", commands=[torch_install(torch.base_version, variant)])]


def newest_with(ctx: Context, cc: Version) -> List[Remedy]:
    """torch says its own build lacks the GPU's arch, though every release the matrix lists
    (of the stated CUDA) has it: an older release or a build for an older CUDA is installed."""
    same = same_release(ctx, cc)
    if same:
        return same
    python = ctx.python
    releases = sorted(ctx.matrix.torch_releases, key=lambda rel: Version(rel.minor), reverse=True)
    runs = [rel for rel in releases if python is None or str(python) in rel.python]
    for rel in runs:
        fitting = variants(rel, cc)
        if fitting:
            variant = max(fitting, key=lambda v: int(v[2:]))
            floor = FIRST_NVCC.get(f"{cc.major}{cc.minor}")
            need = (f"; sm_{cc.major}{cc.minor} needs a torch built for CUDA {floor} or newer"
                    if floor else "")
            return [Remedy(summary=f"The installed torch is a build without sm_{cc.major}{cc.minor} "
                           "(an older release, or one for an older CUDA: the arch list the "
                           f"message prints{need}): install torch {rel.latest_patch} built for "
                           f"{variant}, which has its kernels, then reinstall the packages "
                           "built for the old torch.",
                           commands=[torch_install(rel.latest_patch, variant)])]
    if python is not None and releases and not runs:
        oldest = releases[-1]
        built = sorted(variants(oldest, cc), key=lambda v: int(v[2:]))
        cuda = f"{built[0]} (CUDA {built[0][2:-1]}.{built[0][-1]})" if built else "its CUDA"
        return [Remedy(summary=f"The installed torch is a build without sm_{cc.major}{cc.minor} "
                       f"(an older release, or one for an older CUDA), and Python {python} is "
                       f"older than any torch from {oldest.minor} on supports: install a newer "
                       f"Python, then a torch built for {cuda} or later (torch {oldest.minor} "
                       f"runs on Python {', '.join(oldest.python)}).")]
    return []
