"""Remedies as data: install commands and code changes built from the facts and the matrix."""

from __future__ import annotations

from typing import Callable, Iterable, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.checks.base import release, torch_view, version
from fadoctor.facts import Facts
from fadoctor.matrix import Matrix
from fadoctor.matrix.models import DriverVersion, FlashAttnRelease, TorchRelease
from fadoctor.report import Remedy
from fadoctor.shell import attempt, command, env, requirement, url
from fadoctor.snippets import snippet

TORCH_INDEX = "https://download.pytorch.org/whl/{variant}"
TRANSFORMERS_SDPA = snippet("transformers_sdpa").code


def cuda_of_variant(variant: str) -> Version:
    """cu130 -> 13.0, cu121 -> 12.1, cu118 -> 11.8."""
    digits = variant[2:]
    return Version(f"{digits[:-1]}.{digits[-1]}")


def variant_for_driver(matrix: Matrix, rel: TorchRelease, driver: Optional[Version]
                       ) -> Optional[Tuple[str, bool]]:
    """The newest CUDA variant of a torch release this driver runs, and whether with CUDA's full
    feature set (the toolkit's own driver) or only under minor-version compatibility (the
    major's floor)."""
    if driver is None:
        return rel.default_variant, True
    full, compat = [], []
    for variant in rel.cuda_variants:
        cuda = cuda_of_variant(variant)
        needed = matrix.toolkit_driver(cuda)
        floor = matrix.driver_floor(cuda.major)
        if needed is not None and driver >= needed.min_driver:
            full.append(cuda)
        elif floor is not None and driver >= floor.min_driver:
            compat.append(cuda)
    for found, complete in ((full, True), (compat, False)):
        if found:
            best = max(found)
            return f"cu{best.major}{best.minor}", complete
    return None


def remedy(summary: str, build: Callable[[], Iterable[str]], code: Optional[str] = None
           ) -> Remedy:
    """A remedy whose commands `build` makes with fadoctor.shell. When a value from the examined
    environment is not safe to put in a command, the remedy shows none and says why."""
    commands, why = attempt(build)
    if why is not None:
        summary += f" (No command is shown: {why}.)"
    return Remedy(summary=summary, commands=commands, code=code)


def torch_install(torch_version: str, variant: str) -> str:
    return command("pip", "install", requirement("torch", f"{torch_version}+{variant}"),
                   "--index-url", url(TORCH_INDEX.format(variant=variant)))


def driver_version(facts: Facts) -> Optional[DriverVersion]:
    data = facts.driver.data
    if data is None or not data.present or not data.version:
        return None
    try:
        return DriverVersion(data.version)
    except InvalidVersion:
        return None


def reinstall_flash_attn(fa_version: str) -> Remedy:
    """Make pip fetch or build flash-attn again for the torch that is installed now."""
    return remedy(
        f"Reinstall flash-attn {fa_version} for the installed torch: its setup.py picks the "
        "prebuilt wheel for this torch, CUDA and C++ ABI, or compiles one. --no-cache-dir keeps "
        "pip from reusing a wheel built for the old torch.",
        lambda: [command("pip", "uninstall", "-y", "flash-attn"),
                 command("pip", "install", requirement("flash-attn", fa_version),
                         "--no-build-isolation", "--no-cache-dir")])


def build_from_source(fa_version: str, why: str) -> Remedy:
    """Compile flash-attn here, against this torch, CUDA and glibc, instead of any prebuilt wheel."""
    return remedy(
        f"{why} Build it from source: FLASH_ATTENTION_FORCE_BUILD=TRUE makes setup.py compile "
        "instead of fetching a wheel (it needs nvcc of torch's CUDA major, and ninja; MAX_JOBS "
        "bounds its memory).",
        lambda: [command(env("FLASH_ATTENTION_FORCE_BUILD", "TRUE"), "pip", "install",
                         requirement("flash-attn", fa_version), "--no-build-isolation",
                         "--no-cache-dir")])


def newest_release_with_wheel(matrix: Matrix, torch_version: Version
                              ) -> Optional[FlashAttnRelease]:
    """The newest FA2 release whose workflow built wheels for this torch minor (any CUDA, any
    ABI): the fallback when the torch build is too little known for `exact_wheel`."""
    minor = str(release(torch_version))
    candidates = [r for r in matrix.flash_attn_releases
                  if minor in r.wheel_torch and not r.version.is_prerelease]
    return max(candidates, key=lambda r: r.version, default=None)


def sdpa_fallback(reason: str) -> Remedy:
    return Remedy(
        summary=(f"{reason} Use PyTorch's scaled_dot_product_attention instead; in transformers, "
                 'load the model with attn_implementation="sdpa".'),
        code=TRANSFORMERS_SDPA,
    )


def torch_variant_remedies(matrix: Matrix, facts: Facts, why: str) -> List[Remedy]:
    """Install the CUDA build of the same torch release that fits this machine's driver."""
    torch = torch_view(facts)
    v = version(torch.version if torch else None)
    if v is None:
        return []
    rel = matrix.torch_release(v)
    if rel is None:
        return [Remedy(summary=f"{why} torch {v.base_version} is not in fadoctor's matrix; pick a "
                       "CUDA build of it that fits your driver.")]
    chosen = variant_for_driver(matrix, rel, driver_version(facts))
    if chosen is None:
        return [Remedy(summary=f"{why} No CUDA build of torch {rel.minor} runs on this driver; "
                       "upgrade the NVIDIA driver first.")]
    variant, complete = chosen
    caveat = "" if complete else (" This driver runs it only under CUDA minor-version "
                                  "compatibility (a limited feature set, no PTX JIT).")
    return [remedy(f"{why} Install the {variant} build of torch {v.base_version}.{caveat}",
                   lambda: [torch_install(v.base_version, variant)])]
