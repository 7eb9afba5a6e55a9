"""`solve(machine, constraints, matrix) -> Plan`: the best working torch + flash-attention
combination for a machine, the alternatives, and why every other candidate was rejected (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.archs import arch_name, arch_runs_on
from fadoctor.errors import NoPlanError, UsageError
from fadoctor.facts.model import Family
from fadoctor.fix.pick import Pick, provenance, rank
from fadoctor.fix.tiers import AS_FAST, community_picks, hub_picks, sdpa_speed
from fadoctor.install.fa4 import fa4_requirement, newest_fa4
from fadoctor.install.machine import Machine
from fadoctor.install.torch import TorchBuild, cuda_of_variant, torch_install
from fadoctor.install.wheels import Wheel, build_recipe, find_wheel
from fadoctor.matrix import Matrix
from fadoctor.matrix.models import SpeedRatio, TorchRelease
from fadoctor.safety.shell import AND, command, env, url

# FlashAttention-3 is built from hopper/ of a flash-attention release tag, never from main: the
# tag whose hopper/setup.py and README the matrix's FA3 requirements were read at.
FA3_TAG = "v2.8.3"


@dataclass(frozen=True)
class Constraints:
    keep_torch: bool = False
    torch: Optional[str] = None  # 2.4, 2.4.0, 2.4.0+cu121
    flash_attn: Optional[str] = None  # an exact flash-attn 2.x version
    family: Optional[Family] = None


@dataclass(frozen=True)
class Plan:
    machine: Machine
    best: Pick
    alternatives: Tuple[Pick, ...] = ()
    rejected: Tuple[str, ...] = ()


@dataclass
class _Search:
    machine: Machine
    constraints: Constraints
    matrix: Matrix
    rejected: List[str] = field(default_factory=list)


def solve(machine: Machine, constraints: Constraints, matrix: Matrix) -> Plan:
    search = _Search(machine, constraints, matrix)
    torches = torch_builds(search)
    picks: List[Pick] = []
    cc = machine.gpu_cc
    floor = min(matrix.family_support(f).min_cc for f in (Family.FA2, Family.FA3, Family.FA4))
    wanted = constraints.family
    below = cc is not None and cc < floor
    # The floor is FlashAttention-2's (the lowest): the decisive reason unless another family was
    # asked for, which gives its own (FA3: Hopper only, from the matrix), from its search.
    if below and wanted in (None, Family.FA2):
        search.rejected.insert(0, f"no flash-attention 2.x/3/4 build runs on compute capability "
                               f"{cc} (FlashAttention-2 needs {floor}+)")
        mark = 0
    else:
        mark = len(search.rejected)  # the families' own reasons follow the torch builds'
        picks.extend(_family_picks(search, torches, wanted))
    picks.sort(key=rank)
    if wanted is not None and not picks:  # asked for a family: never SDPA instead
        name = {Family.FA2: "FlashAttention-2", Family.FA3: "FlashAttention-3",
                Family.FA4: "FlashAttention-4"}.get(wanted, wanted.value)
        # Below the floor, the first reason (the GPU's); else the family's own, the last.
        why = search.rejected[mark] if below and len(search.rejected) > mark else \
            search.rejected[-1]
        raise NoPlanError(f"no {name} plan for this machine: {why}")
    sdpa, as_fast = _sdpa(search, torches, picks[0] if picks else None)
    # Nothing to install and as fast as the best flash-attention pick: SDPA first, unless a
    # family was asked for.
    picks.insert(0 if as_fast and constraints.family is None else len(picks), sdpa)
    return Plan(machine=machine, best=picks[0], alternatives=tuple(picks[1:]),
                rejected=tuple(search.rejected))


def _family_picks(search: _Search, torches: List[TorchBuild],
                  wanted: Optional[Family]) -> List[Pick]:
    """Every family's picks (or the one asked for), each search adding its reasons to reject."""
    machine, matrix, picks = search.machine, search.matrix, []
    if wanted in (None, Family.FA2):
        picks.extend(_fa2_wheel(search, torches))
    if wanted in (None, Family.FA4):
        picks.extend(_fa4(search, torches))
    if wanted in (None, Family.FA2):
        picks.extend(_fa2_build(search, torches))
    if wanted in (None, Family.FA3):
        picks.extend(_fa3(search, torches))
    if wanted in (None, Family.FA2, Family.FA3):
        picks.extend(community_picks(torches, machine, matrix, wanted, search.rejected))
        picks.extend(hub_picks(torches, machine, matrix, wanted, search.rejected))
    return picks


# -- torch -----------------------------------------------------------------------------------


def torch_builds(search: _Search) -> List[TorchBuild]:
    """The torch builds to consider, best first: the installed one when kept, else the newest
    release (or the one asked for) in the CUDA variant this driver runs."""
    m, c, matrix = search.machine, search.constraints, search.matrix
    if c.keep_torch:
        return [_installed(m, matrix)]
    found = _candidates(search)
    # The installed build first, when it fits: a plan that keeps it changes less.
    return sorted(found, key=lambda t: not t.installed)


def _candidates(search: _Search) -> List[TorchBuild]:
    m, c, matrix = search.machine, search.constraints, search.matrix
    wanted = _parse_torch(c.torch) if c.torch else None
    out: List[TorchBuild] = []
    for rel in sorted(matrix.torch_releases, key=lambda r: Version(r.minor), reverse=True):
        if wanted is not None and Version(rel.minor) != Version(f"{wanted.major}.{wanted.minor}"):
            continue
        version = Version(wanted.base_version if wanted and wanted.release[2:] else rel.latest_patch)
        variants = [wanted.local] if wanted is not None and wanted.local else rel.cuda_variants
        for variant in _by_preference(rel, variants):
            why = _torch_unfit(rel, variant, m, search.matrix)
            if why:
                search.rejected.append(f"torch {version}+{variant}: {why}")
                continue
            abi = rel.cxx11_abi_variants.get(variant, rel.cxx11_abi)
            same = m.torch is not None and m.torch == Version(f"{version}+{variant}")
            out.append(TorchBuild(version, variant, abi, installed=same))
    if not out:
        raise NoPlanError("no torch build in fadoctor's matrix fits this machine and these "
                          "constraints: " + "; ".join(search.rejected[-3:]))
    return out


def _installed(m: Machine, matrix: Matrix) -> TorchBuild:
    if m.torch is None or m.torch_variant is None or not m.torch_variant.startswith("cu"):
        raise UsageError("--keep-torch needs an installed CUDA build of torch (or give --torch)")
    rel = matrix.torch_release(m.torch)
    abi = m.torch_cxx11_abi
    if abi is None and rel is not None:
        abi = rel.cxx11_abi_variants.get(m.torch_variant, rel.cxx11_abi)
    return TorchBuild(Version(m.torch.base_version), m.torch_variant, bool(abi), installed=True)


def _by_preference(rel: TorchRelease, variants: List[str]) -> List[str]:
    """The default (PyPI) variant first, then the newer CUDA ones, then the older ones."""
    rest = sorted((v for v in variants if v != rel.default_variant),
                  key=lambda v: cuda_of_variant(v), reverse=True)
    return ([rel.default_variant] if rel.default_variant in variants else []) + rest


def _torch_unfit(rel: TorchRelease, variant: str, m: Machine, matrix: Matrix) -> Optional[str]:
    if variant not in rel.cuda_variants:
        return f"torch {rel.minor} has no {variant} build"
    if m.python is not None and str(m.python) not in rel.python:
        return f"no wheel for Python {m.python} (it has {', '.join(rel.python)})"
    if m.platform != rel.platform:
        return f"fadoctor's matrix holds {rel.platform} builds of it only, not {m.platform}"
    cuda = cuda_of_variant(variant)
    floor = matrix.driver_floor(cuda.major)
    if m.driver is not None and floor is not None and m.driver < floor.min_driver:
        return f"needs driver >= {floor.min_driver}; this one is {m.driver}"
    archs = rel.arch_lists.get(variant)
    cc = m.gpu_cc
    if cc is not None and archs and not any(
            arch_runs_on(arch_name(a), (cc.major, cc.minor)) for a in archs.split(";")):
        return f"its kernels ({archs}) do not run on sm_{cc.major}{cc.minor}"
    return None


def _parse_torch(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion as exc:
        raise UsageError(f"--torch {text}: not a version") from exc


def _torch_steps(torch: TorchBuild) -> Tuple[str, ...]:
    return () if torch.installed else (torch_install(str(torch.version), torch.variant),)


# -- families --------------------------------------------------------------------------------


def _fa2_wheel(search: _Search, torches: List[TorchBuild]) -> List[Pick]:
    wanted = Version(search.constraints.flash_attn) if search.constraints.flash_attn else None
    releases = sorted((r for r in search.matrix.flash_attn_releases
                       if wanted is None or r.version == wanted),
                      key=lambda r: r.version, reverse=True)
    for torch in torches:
        reasons: List[str] = []
        for release in releases:
            wheel, why = find_wheel(release, torch, search.machine, search.matrix)
            if wheel is not None:
                search.rejected.extend(f"{torch}: {r}" for r in reasons[:3])
                return [Pick(Family.FA2, "wheel", f"flash-attn {release.version}, the prebuilt "
                             f"wheel for {torch}", provenance(search.matrix, "official", 1),
                             torch=torch, version=str(release.version), wheel=wheel,
                             url=wheel.url, commands=(*_torch_steps(torch),
                                                    command("pip", "install", "--no-deps",
                                                            url(wheel.url)),
                                                    command("pip", "install", "einops")),
                             notes=("--no-deps: the wheel does not pin torch and could pull "
                                    "another one (flash-attention#1724)",
                                    *filter(None, [wheel.caveat(torch.version)]),
                                    *_assumed(search, wheel, torch)))]
            reasons.append(why or "")
        search.rejected.append(f"{torch}: no flash-attn 2.x wheel fits"
                               + (f" (newest: {reasons[0]})" if reasons else ""))
    return []


def _assumed(search: _Search, wheel: Wheel, torch: TorchBuild) -> List[str]:
    """What the exact wheel takes for granted where the machine is not known: its Python (the
    file is for one CPython) and the glibc it needs."""
    m, release, out = search.machine, wheel.release, []
    if m.python is None:
        tag = wheel.filename.split("-")[2]
        out.append(f"ASSUMED: Python {tag[2]}.{tag[3:]} ({tag}), the planned machine's Python is "
                   "unknown: give --python VERSION for its wheel (the release has "
                   f"{', '.join(release.assets.get(wheel.filename.split('+')[1].split('-')[0], []))})")
    if m.glibc is None:
        floors = [d for d in search.matrix.defects_for(release.version) if d.min_glibc is not None
                  and d.matches(torch.version, m.gpu_cc, m.driver, cxx11_abi=torch.cxx11_abi,
                                glibc=Version("0"), torch_cuda=torch.cuda) is not False]
        out += [f"ASSUMED: glibc >= {d.min_glibc} ({d.id}; the planned machine's glibc is unknown: "
                "give --glibc VERSION)" for d in floors]
        if not floors:
            out.append(f"ASSUMED: a glibc as new as the release's build runner's "
                       f"({release.builds_on}); the planned machine's is unknown (--glibc VERSION)")
    return out


def _fa2_build(search: _Search, torches: List[TorchBuild]) -> List[Pick]:
    torch = torches[0]
    wanted = Version(search.constraints.flash_attn) if search.constraints.flash_attn else None
    release, commands = build_recipe(torch, search.machine, search.matrix, wanted)
    if release is None:
        search.rejected.append(f"{torch}: no flash-attn 2.x release to build for it")
        return []
    return [Pick(Family.FA2, "build", f"flash-attn {release.version} compiled here for {torch}",
                 provenance(search.matrix, "source-build", 5), torch=torch, version=str(release.version),
                 commands=(*_torch_steps(torch), *commands),
                 notes=(f"needs nvcc {torch.cuda.major}.x (torch's cpp_extension refuses another "
                        "major) and ninja: minutes with ninja on many cores, hours without "
                        "(flash-attention README, #113)", _jobs_note(search.machine)))]


def _jobs_note(machine: Machine) -> str:
    """Where MAX_JOBS comes from: the planned machine's memory, or an assumption said so."""
    jobs = machine.build_jobs
    if machine.memory_gib:
        return f"MAX_JOBS={jobs}: about 5 GB of RAM per nvcc thread on {machine.memory_gib:.0f} GB"
    return (f"MAX_JOBS={jobs} is assumed (the planned machine's memory is unknown): the README's "
            "4 needs about 40 GB free; on a smaller machine use its free GB / 10")


def _fa4(search: _Search, torches: List[TorchBuild]) -> List[Pick]:
    m, support = search.machine, search.matrix.family_support(Family.FA4)
    cc = m.gpu_cc
    if cc is not None and str(cc) not in support.tuned:
        search.rejected.append(f"flash-attn-4: written for {', '.join(support.tuned)}, not "
                               f"sm_{cc.major}{cc.minor}")
        return []
    newest = max((r for r in search.matrix.fa4_releases if r.published), default=None,
                 key=lambda r: r.version)
    if cc is not None and newest is not None and newest.accepts(cc.major, "backward") is False:
        # interface.py's backward refuses this GPU at every beta: no training (inference only)
        search.rejected.append(f"flash-attn-4 {newest.version}: no backward (training) on "
                               f"sm_{cc.major}{cc.minor}")
        return []
    for req in search.matrix.requirements(Family.FA4):
        if req.min_python is not None and m.python is not None and m.python < req.min_python:
            search.rejected.append(f"flash-attn-4: needs Python >= {req.min_python}")
            return []
    torch = torches[0]
    spec = fa4_requirement(search.matrix, torch.cuda)
    pinned = newest_fa4(search.matrix)  # the version spec pins: what `fix --observed` matches runs on
    return [Pick(Family.FA4, "index", f"flash-attn-4 (CuTe DSL, no compilation) with {torch}",
                 provenance(search.matrix, "official", 1), torch=torch,
                 version=str(pinned) if pinned else None,
                 commands=(*_torch_steps(torch), command("pip", "install", spec)),
                 notes=("a beta (every 4.x is a pre-release: pinned, or pip skips it); import it "
                        "as `from flash_attn.cute import flash_attn_func`",))]


def _fa3(search: _Search, torches: List[TorchBuild]) -> List[Pick]:
    cc, torch = search.machine.gpu_cc, torches[0]
    support = search.matrix.family_support(Family.FA3)
    if cc is not None and str(cc) not in support.tuned:
        search.rejected.append(f"FlashAttention-3: written for {', '.join(support.tuned)} only, "
                               f"not sm_{cc.major}{cc.minor}")
        return []
    nvcc = next((r for r in search.matrix.requirements(Family.FA3) if r.min_nvcc), None)
    needs = (f"needs CUDA >= {nvcc.min_nvcc}" + (f" ({nvcc.recommended_nvcc} recommended, README)"
                                                 if nvcc.recommended_nvcc else "") + "; "
             if nvcc is not None else "")
    jobs = search.machine.build_jobs
    return [Pick(Family.FA3, "build", f"FlashAttention-3 ({FA3_TAG}'s hopper/) compiled here for "
                 f"{torch}", provenance(search.matrix, "source-build", 5), torch=torch,
                 commands=(*_torch_steps(torch), command("pip", "install", "ninja", "packaging"),
                           command("git", "clone", "--depth", "1", "--branch", FA3_TAG,
                                   "https://github.com/Dao-AILab/flash-attention"),
                           command("cd", "flash-attention/hopper", AND, env("MAX_JOBS", jobs),
                                   "pip", "install", "--no-build-isolation", ".")),
                 notes=(f"{needs}import flash_attn_interface",
                        "its setup.py fetches csrc/cutlass as a git submodule: a git clone, not "
                        "an archive", _jobs_note(search.machine)))]


def _sdpa(search: _Search, torches: List[TorchBuild], best: Optional[Pick]
          ) -> Tuple[Pick, bool]:
    """PyTorch SDPA, and whether it is as fast as the best flash-attention pick (measured, or
    the same kernel) with nothing to install: then it comes first."""
    torch = torches[0]
    family = best.family if best is not None else None
    speed = sdpa_speed(search.machine, search.matrix, family)
    runs = speed is not None and _backend_runs(search, torch, speed.backend,
                                               vendored=speed.basis == "same kernel")
    said = [_speed_note(speed, family)] if speed is not None and runs else []
    pick = Pick(None, "sdpa", f"PyTorch SDPA with {torch}, no flash-attn package",
                provenance(search.matrix, "pytorch-sdpa", 6), torch=torch,
                commands=_torch_steps(torch),
                notes=(*said, _SDPA_LIMITS,
                       'transformers: load the model with attn_implementation="sdpa"',
                       "code that calls flash_attn_func: `fadoctor snippet sdpa_flash_attn_func` "
                       "prints a drop-in with the same layout and semantics (tested)"))
    as_fast = runs and torch.installed and speed is not None and speed.ratio >= AS_FAST
    return pick, as_fast


# torch.nn.functional.scaled_dot_product_attention takes no window, softcap or ALiBi argument;
# such a model passes an attn_mask, which SDPA's flash backend refuses ("does not support
# non-null attn_mask", pytorch@v2.13.0:aten/src/ATen/native/transformers/sdp_utils_cpp.h),
# so a slower backend runs.
_SDPA_LIMITS = ("SDPA has no sliding-window, softcap or ALiBi argument: a model that uses them "
                "runs SDPA with a mask on a slower backend, or needs a flash-attention family "
                "(`fadoctor model CONFIG` says which)")


def _speed_note(speed: SpeedRatio, family: Optional[Family]) -> str:
    names = {Family.FA2: "FlashAttention-2", Family.FA4: "FlashAttention-4"}
    name = (names.get(family) or family.value) if family is not None else "flash-attention"
    if speed.basis == "same kernel":
        return f"SDPA's {speed.backend} backend runs {name}'s kernel: as fast, nothing to install"
    where = ", ".join(f"sm_{c.replace('.', '')}" for c in speed.ccs) or "this GPU"
    return (f"SDPA's {speed.backend} backend ran at {speed.ratio:.0%} of {name}'s speed on "
            f"{where} (fadoctor bench, forward+backward, recorded)")


def _backend_runs(search: _Search, torch: TorchBuild, backend: str, vendored: bool) -> bool:
    """This torch's SDPA backend accepts this GPU (the matrix's arch range) and, for a claim
    of FlashAttention-2's own kernel, the matrix knows which FA2 this torch vendors."""
    cc = search.machine.gpu_cc
    found = search.matrix.sdpa_range(backend, torch.version)
    return (cc is not None and found is not None and found.min_cc <= cc <= found.max_cc
            and (not vendored or found.vendored_fa2 is not None))


__all__ = ["Constraints", "Pick", "Plan", "solve"]
