"""Remedies as data: install commands and code changes built from the facts and the matrix."""

from __future__ import annotations

from typing import Callable, Iterable, List, Optional

from fadoctor.checks.base import torch_view, version
from fadoctor.facts.model import Facts
from fadoctor.install.torch import torch_install, variant_for_driver
from fadoctor.install.views import driver_version
from fadoctor.matrix import Matrix
from fadoctor.report import Remedy
from fadoctor.safety.shell import attempt, command, env, requirement
from fadoctor.snippets import snippet

TRANSFORMERS_SDPA = snippet("transformers_sdpa").code


def remedy(summary: str, build: Callable[[], Iterable[str]], code: Optional[str] = None
           ) -> Remedy:
    """A remedy whose commands `build` makes with fadoctor.safety.shell. When a value from the examined
    environment is not safe to put in a command, the remedy shows none and says why."""
    commands, why = attempt(build)
    if why is not None:
        summary += f" (No command is shown: {why}.)"
    return Remedy(summary=summary, commands=commands, code=code)


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
