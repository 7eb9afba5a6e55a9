"""FlashAttention-2 for one torch build: the exact prebuilt wheel its release workflow made, or why
not, the releases with wheels for a torch or a GPU, and the build recipe narrowed to this GPU when
no wheel fits (pure, over the matrix)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.archs import arch_runs_on
from fadoctor.install.machine import BUILD_THREADS, Machine
from fadoctor.install.torch import TorchBuild
from fadoctor.matrix import Matrix
from fadoctor.matrix.base import minor_of
from fadoctor.matrix.models import FlashAttnRelease, parse_local
from fadoctor.safety.shell import command, env, requirement

RELEASES = "https://github.com/Dao-AILab/flash-attention/releases/download"


@dataclass(frozen=True)
class Wheel:
    release: FlashAttnRelease
    filename: str
    built_with: Optional[str] = None  # the exact torch its CI job compiled against

    def caveat(self, torch: Version) -> Optional[str]:
        """Said when the wheel's torch is another patch release than this one: maintainers say
        such wheels may not load (flash-attention#931: 'built for torch 2.2.2 ... not compatible
        with 2.2.0')."""
        if self.built_with is None or Version(self.built_with).release[:3] == torch.release[:3]:
            return None
        return (f"compiled against torch {self.built_with}, not {torch}: a wheel for another "
                "patch release may not load (flash-attention#931)")

    @property
    def url(self) -> str:
        return f"{RELEASES}/{self.release.tag}/{self.filename}"


def find_wheel(release: FlashAttnRelease, torch: TorchBuild, machine: Machine,
               matrix: Matrix) -> Tuple[Optional[Wheel], Optional[str]]:
    """The release's wheel for this torch build and machine, or why there is none."""
    local = release.local_version(torch.version, torch.cuda, torch.cxx11_abi)
    if local is None:
        return None, f"flash-attn {release.version} never downloads a wheel (setup.py compiles)"
    pythons = release.assets.get(local)
    if pythons is None:
        built = "its job could not build one" if local in release.not_built else "none was built"
        return None, f"flash-attn {release.version} has no {local} wheel ({built})"
    if machine.python_tag and machine.python_tag not in pythons:
        return None, (f"flash-attn {release.version}'s {local} wheels are for "
                      f"{', '.join(pythons)}, not {machine.python_tag}")
    if machine.platform != release.platform:
        return None, f"flash-attn wheels are {release.platform} only, not {machine.platform}"
    why = _wheel_unfit(release, torch, local, machine, matrix)
    if why:
        return None, why
    python = machine.python_tag or pythons[-1]
    filename = f"flash_attn-{release.version}+{local}-{python}-{python}-{release.platform}.whl"
    parsed = parse_local(local)
    built_with = release.built_against_torch.get(parsed.key) if parsed else None
    return Wheel(release, filename, built_with), None


def _wheel_unfit(release: FlashAttnRelease, torch: TorchBuild, local: str, machine: Machine,
                 matrix: Matrix) -> Optional[str]:
    built = matrix.wheel_cxx11_abi(release, local)
    if built is not None and built != torch.cxx11_abi:
        return (f"flash-attn {release.version}'s {local} wheel was compiled against a torch "
                f"{torch.minor} build with C++11 ABI {int(built)}, not {int(torch.cxx11_abi)}")
    cc = machine.gpu_cc
    archs = release.wheel_archs(local)
    if cc is not None and archs and not any(arch_runs_on(a, (cc.major, cc.minor))
                                            for a in archs):
        return (f"flash-attn {release.version}'s {local} wheels carry {' '.join(archs)}: no "
                f"kernels for sm_{cc.major}{cc.minor}")
    for defect in matrix.defects_for(release.version):
        if defect.applies(torch.version, cc, machine.driver, cxx11_abi=torch.cxx11_abi,
                          glibc=machine.glibc, torch_cuda=torch.cuda):
            return f"flash-attn {release.version}: {defect.summary}"
    return None


def build_recipe(torch: TorchBuild, machine: Machine, matrix: Matrix,
                 fa_version: Optional[Version]) -> Tuple[Optional[FlashAttnRelease], List[str]]:
    """The release to compile for this torch, and the commands, narrowed to this GPU."""
    candidates = [r for r in matrix.flash_attn_releases if not r.version.is_prerelease
                  and torch.version >= r.readme_min_torch
                  and (fa_version is None or r.version == fa_version)
                  and (machine.python is None or str(machine.python) + ".0" in r.requires_python
                       or machine.python in r.requires_python)]
    release = max(candidates, key=lambda r: r.version, default=None)
    # A build the matrix knows fails here (torch's C++20 headers, nvcc's sm_120 crash) is not
    # offered; an older release is no way out (it has the defect too, or lacks this GPU).
    if release is None or any(d.breaks_build(torch.version, machine.gpu_cc)
                              for d in matrix.defects_for(release.version)):
        return None, []
    arch = build_arch(release, machine.gpu_cc, torch.cuda) if release.arch_env else None
    archs = [env(release.arch_env, arch)] if release.arch_env and arch else []
    return release, [
        command("pip", "install", "ninja", "packaging"),
        command(env("MAX_JOBS", machine.build_jobs), env("NVCC_THREADS", BUILD_THREADS), *archs,
                env("FLASH_ATTENTION_FORCE_BUILD", "TRUE"), "pip", "install",
                requirement("flash-attn", release.version), "--no-build-isolation",
                "--no-cache-dir"),
    ]


def build_arch(release: FlashAttnRelease, cc: Optional[Version],
               nvcc: Optional[Version] = None) -> Optional[str]:
    """The FLASH_ATTN_CUDA_ARCHS value that builds kernels for this GPU and no others: one its
    setup.py acts on (the -gencode lines, `build_archs`: 80, 90, 100, 120 at v2.8.3; any other
    value builds nothing), the newest whose SASS runs on the GPU (sm_80 on an sm_86 or sm_89).
    setup.py skips an arch that needs a newer nvcc than `nvcc` (torch's CUDA: cpp_extension wants
    the same major). None: no such value, or the GPU unknown (the release's default list is kept)."""
    if cc is None:
        return None
    runs = [arch for arch, needs in release.build_archs.items()
            if arch_runs_on(arch, (cc.major, cc.minor)) and (nvcc is None or
                                                             Version(needs) <= nvcc)]
    newest = max(runs, key=lambda a: int(a.removeprefix("sm_")), default=None)
    return newest.removeprefix("sm_") if newest else None


def newest_wheel(torch: TorchBuild, machine: Machine, matrix: Matrix) -> Optional[Wheel]:
    """The newest release's wheel for this torch build that this machine can load."""
    for release in sorted(matrix.flash_attn_releases, key=lambda r: r.version, reverse=True):
        wheel, _ = find_wheel(release, torch, machine, matrix)
        if wheel is not None:
            return wheel
    return None


def newest_release_with_wheel(matrix: Matrix, torch_version: Version
                              ) -> Optional[FlashAttnRelease]:
    """The newest FA2 release whose workflow built wheels for this torch minor (any CUDA, any
    ABI): the fallback when the torch build is too little known for `newest_wheel`."""
    minor = minor_of(torch_version)
    candidates = [r for r in matrix.flash_attn_releases
                  if minor in r.wheel_torch and not r.version.is_prerelease]
    return max(candidates, key=lambda r: r.version, default=None)


def first_release_with_kernels(matrix: Matrix, cc: Version) -> Optional[FlashAttnRelease]:
    """The first FA2 release whose prebuilt wheels carry kernels for this compute capability."""
    target = (cc.major, cc.minor)
    candidates = [r for r in matrix.flash_attn_releases if not r.version.is_prerelease
                  and any(arch_runs_on(a, target) for a in r.archs)]
    return min(candidates, key=lambda r: r.version, default=None)
