"""Remedies for a flash-attention build that does not load, by the cause the diagnosis names:
the wheel to take, the release that fits, or the build that links against this system."""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional

from packaging.version import Version

from fadoctor.checks.base import release, version
from fadoctor.checks.classify import Diagnosis
from fadoctor.checks.remedies import build_from_source, reinstall_flash_attn, remedy, sdpa_fallback
from fadoctor.facts.model import Facts, Family, FlashAttention, Torch
from fadoctor.install.machine import from_facts
from fadoctor.install.torch import installed_build
from fadoctor.install.wheels import newest_release_with_wheel, newest_wheel
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import AND, command, requirement, url

# flash-attention's optional extensions: the csrc/ folder whose setup.py builds each
# (csrc/layer_norm/setup.py, csrc/rotary/setup.py, ...), and the Triton module in flash_attn/ops/
# that does the same without a compiled extension. The maintainer recommends the Triton layer
# norm over csrc/layer_norm, unmaintained since 2024-01 (flash-attention#1966).
CSRC = {"dropout_layer_norm": ("csrc/layer_norm", "flash_attn.ops.triton.layer_norm"),
        "rotary_emb": ("csrc/rotary", "flash_attn.ops.triton.rotary"),
        "xentropy_cuda_lib": ("csrc/xentropy", "flash_attn.ops.triton.cross_entropy"),
        "fused_softmax_lib": ("csrc/fused_softmax", None),
        "fused_dense_lib": ("csrc/fused_dense_lib", None)}


def csrc_remedies(module: str) -> List[Remedy]:
    folder, triton = CSRC[module]
    out = [Remedy(summary=f"{module} is built separately, from flash-attention's {folder}: "
                  "rebuild it against this torch, in a checkout of your flash-attn version.",
                  commands=[command("cd", f"flash-attention/{folder}", AND, "pip", "install",
                                    ".", "--no-build-isolation")])]
    if triton:
        out.append(Remedy(summary=f"Or use {triton}, the Triton version, which needs no compiled "
                          f"extension, and uninstall {module}.",
                          commands=[command("pip", "uninstall", module)]))
    return out


def import_remedies(fa: FlashAttention, diagnosis: Diagnosis, facts: Facts, matrix: Matrix,
                    torch: Optional[Torch] = None) -> List[Remedy]:
    """What to do about a family that does not load, by the cause `diagnosis` names."""
    torch = torch or facts.torch.data
    tv = version(torch.version if torch else None)
    if fa.family != Family.FA2 or fa.version is None or tv is None or torch is None:
        return [Remedy(summary=f"Reinstall {fa.distribution or fa.family.value} built for torch "
                       f"{torch.version if torch else '(unknown)'}, or build it from source in "
                       "this environment."),
                sdpa_fallback("Meanwhile:")]
    build = _REMEDIES.get(diagnosis.category, _reinstall)
    return [*build(fa.version, diagnosis, torch, tv, matrix, facts), sdpa_fallback("Meanwhile:")]


def _reinstall(fa_version: str, diagnosis: Diagnosis, torch: Torch, tv: Version,
               matrix: Matrix, facts: Facts) -> List[Remedy]:
    return [reinstall_flash_attn(fa_version)]


def exact_wheel(facts: Facts, matrix: Matrix, torch: Torch, glibc_below: Optional[str] = None,
                replace_installed: bool = True) -> Optional[Remedy]:
    """The newest flash-attn 2.x wheel built for this torch build (CUDA, real C++ ABI) that
    this system can load, from the matrix: what `fadoctor fix --keep-torch` would pick."""
    tv = version(torch.version)
    build = installed_build(tv, torch.cuda, torch.cxx11_abi)
    if tv is None or build is None:
        return None
    machine = from_facts(facts)
    if glibc_below is not None:  # the loader said which version is missing: glibc is older
        major, minor = (int(p) for p in glibc_below.split(".")[:2])
        machine = replace(machine, glibc=Version(f"{major}.{minor - 1}"))
    wheel = newest_wheel(build, machine, matrix)
    if wheel is None:
        return None
    caveat = wheel.caveat(tv)
    return remedy(
        f"Install flash-attn {wheel.release.version} from its prebuilt wheel compiled for this "
        f"torch ({build}, C++11 ABI {int(build.cxx11_abi)}), which this system loads"
        + (f"; it was {caveat}." if caveat else ". --no-deps: the wheel does not pin torch and "
           "could pull another one (#1724)."),
        lambda: [*([command("pip", "uninstall", "-y", "flash-attn")] if replace_installed else []),
                 command("pip", "install", "--no-deps", url(wheel.url)),
                 command("pip", "install", "einops")])


def _abi_remedies(fa_version: str, diagnosis: Diagnosis, torch: Torch, tv: Version,
                  matrix: Matrix, facts: Facts) -> List[Remedy]:
    abi = str(bool(torch.cxx11_abi)).upper()
    exact = exact_wheel(facts, matrix, torch)
    hint = Remedy(summary=f"If you pick a release wheel by hand, take one named cxx11abi{abi} "
                  "(this torch's _GLIBCXX_USE_CXX11_ABI) whose torch build really had that ABI; "
                  "the others cannot load.")
    return [*([exact] if exact else []), hint, reinstall_flash_attn(fa_version)]


def _glibc_remedies(fa_version: str, diagnosis: Diagnosis, torch: Torch, tv: Version,
                    matrix: Matrix, facts: Facts) -> List[Remedy]:
    # Reinstalling the same version would fetch the same wheel: only an older build or a local
    # compile links against this glibc.
    required = diagnosis.details.get("required", "")
    below = required.split("_", 1)[1] if required.startswith("GLIBC_") else None
    exact = exact_wheel(facts, matrix, torch, glibc_below=below)
    source = build_from_source(fa_version, "Or compile it on this machine, so it links against "
                               "this glibc.")
    return [*([exact] if exact else []), source]


def _cuda_runtime_remedies(fa_version: str, diagnosis: Diagnosis, torch: Torch, tv: Version,
                           matrix: Matrix, facts: Facts) -> List[Remedy]:
    out = [_other_cuda(diagnosis, torch.version, torch.cuda)] if torch.cuda else []
    return [*out, reinstall_flash_attn(fa_version)]


def _torch_remedies(fa_version: str, diagnosis: Diagnosis, torch: Torch, tv: Version,
                    matrix: Matrix, facts: Facts) -> List[Remedy]:
    exact = exact_wheel(facts, matrix, torch)
    out = [*([exact] if exact else _torch_mismatch_remedies(fa_version, tv, matrix)),
           reinstall_flash_attn(fa_version)]
    # A wheel matches one torch build; a nightly or a container's torch matches none
    # (flash-attention#723, #784: "compile from source").
    source = build_from_source(fa_version, "If the reinstalled wheel fails the same way, it was "
                               "compiled against another build of this torch release.")
    out.insert(0 if tv.is_prerelease else len(out), source)
    return out


_REMEDIES = {
    Category.CXX11_ABI_MISMATCH: _abi_remedies,
    Category.GLIBC_TOO_OLD: _glibc_remedies,
    Category.CUDA_RUNTIME_MISMATCH: _cuda_runtime_remedies,
    Category.TORCH_VERSION_MISMATCH: _torch_remedies,
}


def _torch_mismatch_remedies(fa_version: str, tv: Version, matrix: Matrix) -> List[Remedy]:
    fv = version(fa_version)
    rel = matrix.fa_release(fv) if fv is not None else None
    if rel is None or str(release(tv)) in rel.wheel_torch:
        return []
    newest = newest_release_with_wheel(matrix, tv)
    if newest is None:
        return []
    return [remedy(f"flash-attn {fa_version} has no prebuilt wheel for torch {release(tv)}; "
                   f"{newest.version} is the newest release that has one.",
                   lambda: [command("pip", "install", requirement("flash-attn", newest.version),
                                    "--no-build-isolation", "--no-cache-dir")])]


def _other_cuda(diagnosis: Diagnosis, torch_version: str, torch_cuda: str) -> Remedy:
    """The binary links another CUDA major's runtime than torch's (flash-attention#728)."""
    built = diagnosis.details.get("cuda_major")
    lib = diagnosis.details.get("library", "its CUDA runtime")
    major = torch_cuda.split(".")[0]
    return Remedy(summary=f"This flash-attn was built for CUDA {built or 'another version'} (it "
                  f"needs {lib}), but torch {torch_version} runs CUDA {torch_cuda}: replace it "
                  f"with a build for CUDA {major}. Reinstalling with pip makes setup.py take the "
                  "wheel for this torch's CUDA, or compile one; do not mix in binaries built for "
                  "another CUDA (a conda package, a wheel copied from another machine).")
