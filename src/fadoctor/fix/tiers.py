"""Picks from the sources beyond flash-attention's own releases: community wheel projects' exact
files (tier 4) and the Hugging Face kernels Hub (tier 3), and how fast SDPA is against a family
where the project has measured it (pure, over the matrix)."""

from __future__ import annotations

from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.archs import arch_runs_on
from fadoctor.facts.model import Family
from fadoctor.fix.pick import Pick, provenance
from fadoctor.install.machine import Machine
from fadoctor.install.torch import TorchBuild, torch_install
from fadoctor.matrix import Matrix
from fadoctor.matrix.models import CommunityWheels, HubKernel, SpeedRatio
from fadoctor.report import Category
from fadoctor.safety.shell import command, requirement, url

AS_FAST = 0.95  # an SDPA backend at least this share of a family's speed counts as as fast
_NAME = {Family.FA2: "FlashAttention-2", Family.FA3: "FlashAttention-3"}
_IMPORT = {Family.FA2: "import flash_attn", Family.FA3: "import flash_attn_interface"}


def _python_fits(tag: str, m: Machine) -> bool:
    if m.python is None:
        return tag == "cp39-abi3"  # the one file that loads on any CPython it names
    if tag == "cp39-abi3":
        return m.python >= Version("3.9")
    return tag == m.python_tag


def _gpu_fits(group: CommunityWheels, cuda: str, m: Machine, matrix: Matrix) -> bool:
    """The file's kernels run on this GPU: FA3's on the GPUs its family is written for; FA2's
    from the release's default arch list, less archs the file's nvcc is too old for."""
    cc = m.gpu_cc
    if cc is None:
        return True
    if group.family != Family.FA2:
        return str(cc) in matrix.family_support(group.family).tuned
    release = matrix.fa_release(group.version)
    if release is None or not release.build_archs:
        return False
    return any(arch_runs_on(arch, (cc.major, cc.minor)) and Version(needs) <= Version(cuda)
               for arch, needs in release.build_archs.items())


def _defect(group: CommunityWheels, torch: TorchBuild, m: Machine, matrix: Matrix
            ) -> Optional[str]:
    """A defect of the release that bites here; not the ABI, install or build ones: the file
    was compiled already, against this very torch build."""
    for d in matrix.defects_for(group.version, group.family):
        if d.stage == "install" or d.build_only or d.category == Category.CXX11_ABI_MISMATCH:
            continue
        if d.applies(torch.version, m.gpu_cc, m.driver, cxx11_abi=torch.cxx11_abi,
                     glibc=m.glibc, torch_cuda=torch.cuda):
            return d.summary
    return None


def community_picks(torches: List[TorchBuild], m: Machine, matrix: Matrix,
                    family: Optional[Family], rejected: List[str]) -> List[Pick]:
    """Per family, the first torch build with a community file for it: exact URL, third-party."""
    out: List[Pick] = []
    for group in matrix.community_wheels:
        if (family is not None and group.family != family) or group.platform != m.platform:
            continue
        found = _first_fit(group, torches, m, matrix, rejected)
        if found is not None:
            out.append(_community_pick(group, *found, matrix))
    return out


def _first_fit(group: CommunityWheels, torches: List[TorchBuild], m: Machine, matrix: Matrix,
               rejected: List[str]) -> Optional[Tuple[TorchBuild, List[str]]]:
    for torch in torches:
        for row in group.wheels:
            python, minor, cuda = row[:3]
            if minor != torch.minor or f"cu{cuda.replace('.', '')}" != torch.variant \
                    or not _python_fits(python, m) or not _gpu_fits(group, cuda, m, matrix):
                continue
            why = _defect(group, torch, m, matrix)
            if why:
                rejected.append(f"{group.project} {group.version} for {torch}: {why}")
                continue
            return torch, row
    return None


def _community_pick(group: CommunityWheels, torch: TorchBuild, row: List[str],
                    matrix: Matrix) -> Pick:
    source = provenance(matrix, group.project, 4)
    link = group.url(row)
    steps = [] if torch.installed else [_torch_install(torch)]
    steps.append(command("pip", "install", "--no-deps", url(link)))
    if group.family == Family.FA2:
        steps.append(command("pip", "install", "einops"))
    name = _NAME.get(group.family, group.family.value)
    return Pick(group.family, "wheel", f"{name} {group.version}, a community wheel for {torch}",
                provenance=source, torch=torch, version=str(group.version), url=link,
                commands=tuple(steps),
                notes=(f"third-party: built by {group.repo}, not by the flash-attention project; "
                       "it publishes no sha256, so the exact URL is the only pin",
                       f"compiled against torch {torch.minor}+{torch.variant} from PyTorch's index "
                       f"(its build_linux.sh); {_IMPORT.get(group.family, '')}",
                       "--no-deps: the wheel does not pin torch and could pull another one"))


def _torch_install(torch: TorchBuild) -> str:
    return torch_install(str(torch.version), torch.variant)


def hub_picks(torches: List[TorchBuild], m: Machine, matrix: Matrix, family: Optional[Family],
              rejected: List[str]) -> List[Pick]:
    """The kernels Hub's attention kernels transformers loads by repository name, where their
    build config admits this torch, CUDA, GPU and Python: unproven (its variants were not read)."""
    torch = torches[0]
    out = []
    for kernel in matrix.hub_kernels:
        if family is not None and kernel.family != family:
            continue
        why = _hub_unfit(kernel, torch, m)
        if why:
            rejected.append(f"{kernel.repo}: {why}")
            continue
        out.append(_hub_pick(kernel, torch, matrix))
    return out


def _hub_unfit(kernel: HubKernel, torch: TorchBuild, m: Machine) -> Optional[str]:
    if m.python is not None and kernel.min_python is not None and m.python < kernel.min_python:
        return f"the kernels package needs Python >= {kernel.min_python}"
    if kernel.min_torch is not None and torch.version < kernel.min_torch:
        return f"its CUDA build targets torch's stable ABI {kernel.min_torch}, not {torch}"
    if kernel.cuda is not None and not kernel.cuda.contains(torch.cuda):
        return f"built for CUDA {kernel.cuda}, not {torch.cuda}"
    cc = m.gpu_cc
    if cc is not None and kernel.ccs and not any(
            arch_runs_on(f"sm_{c.replace('.', '')}", (cc.major, cc.minor)) for c in kernel.ccs):
        return f"compiled for {', '.join(kernel.ccs)}, not sm_{cc.major}{cc.minor}"
    return None


def _hub_pick(kernel: HubKernel, torch: TorchBuild, matrix: Matrix) -> Pick:
    steps = [] if torch.installed else [_torch_install(torch)]
    steps.append(command("pip", "install", requirement("kernels", kernel.kernels_version)))
    name = _NAME.get(kernel.family, kernel.family.value)
    return Pick(kernel.family, "hub", f"{name} from the kernels Hub ({kernel.repo}) with {torch}",
                provenance=provenance(matrix, "kernels-hub", 3), torch=torch, commands=tuple(steps),
                notes=(f'transformers: load the model with attn_implementation="{kernel.repo}"',
                       "downloads and runs code from the Hub when the model loads (not at "
                       "install time): a job without network needs it fetched ahead, into the "
                       "Hub cache",
                       "UNPROVEN: which torch/CUDA builds the Hub repository holds was not read; "
                       "`fadoctor check` (FAD121) reports what the installed transformers loads",
                       f"transformers accepts only the kernels releases its own release pins "
                       f"(KERNELS_MIN_VERSION..KERNELS_MAX_VERSION); kernels=="
                       f"{kernel.kernels_version} is the newest fadoctor's matrix records"))


def sdpa_speed(m: Machine, matrix: Matrix, family: Optional[Family]
               ) -> Optional[SpeedRatio]:
    """The best recorded SDPA share of `family`'s speed on this GPU (None: not measured)."""
    cc = m.gpu_cc
    found = [s for s in matrix.attention_speed if s.of == family
             and (not s.ccs or (cc is not None and str(cc) in s.ccs))]
    return max(found, key=lambda s: s.ratio, default=None)


__all__ = ["AS_FAST", "community_picks", "hub_picks", "sdpa_speed"]
