"""A flash-attention family installed without its compiled extension: its RECORD lists no
`flash_attn_2_cuda*.so` (FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE, or a build where CUDA was missing).
Reinstalling the same way (`pip install --force-reinstall flash-attn==X`) rebuilds it under build
isolation, where torch is absent, and fails again: the recipe says what works."""

from __future__ import annotations

from typing import List, Optional

from fadoctor.checks.base import version
from fadoctor.checks.import_remedies import exact_wheel
from fadoctor.checks.remedies import torch_variant_remedies
from fadoctor.facts.model import Facts, Family, FlashAttention
from fadoctor.in_target.tables import FAMILIES
from fadoctor.install.machine import from_facts
from fadoctor.install.torch import installed_build
from fadoctor.install.wheels import build_recipe
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity
from fadoctor.safety.shell import command


def missing_extension(fa: FlashAttention, facts: Facts) -> Optional[List[str]]:
    """The family's compiled modules that its distribution's RECORD does not list, when it
    lists none of them; None when it lists one, or the RECORD was not read."""
    modules = FAMILIES[fa.family.value]["extensions"]
    packages = facts.packages.data
    if not modules or packages is None:
        return None
    records = [d.extensions for d in packages.distributions
               if d.name == fa.distribution and d.version == fa.version]
    if not records or any(r is None for r in records):
        return None
    files = [path for record in records for path in record or []]
    stems = [m.replace(".", "/") + "." for m in modules]
    if any(path.startswith(stem) or f"/{stem}" in path for path in files for stem in stems):
        return None
    return list(modules)


def incomplete_install(fa: FlashAttention, facts: Facts, matrix: Matrix, name: str,
                       refusal: Optional[Finding] = None) -> Optional[Finding]:
    """The finding for an install without its extension, with the recipe that works; where the
    family cannot serve a GPU here (`refusal`, FAD112's verdict), that verdict's remedies instead
    of a wheel or a build that would not run either."""
    modules = missing_extension(fa, facts)
    if modules is None:
        return None
    torch = facts.torch.data
    cpu_only = torch is not None and not torch.cuda and not torch.hip
    remedies: List[Remedy] = []
    if cpu_only:
        remedies += torch_variant_remedies(
            matrix, facts, "First a CUDA build of torch: flash-attn's extension is compiled "
            "against torch's CUDA, and a CPU-only torch has none.")
    remedies += refusal.remedies if refusal is not None else _reinstall(fa, facts, matrix,
                                                                        cpu_only)
    return Finding(
        severity=Severity.ERROR, category=Category.NOT_INSTALLED, subject=fa.family.value,
        message=f"{name} is installed without its compiled extension: its RECORD lists no "
                f"{' or '.join(m + '*.so' for m in modules)} (installed with "
                "FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE, or built where CUDA was missing)"
                + ("; torch here is CPU-only" if cpu_only else "")
                + (f"; reinstalling would not help: {refusal.message}" if refusal else ""),
        evidence={"distribution": fa.distribution, "version": fa.version,
                  "missing": modules},
        remedies=remedies)


def _reinstall(fa: FlashAttention, facts: Facts, matrix: Matrix, cpu_only: bool) -> List[Remedy]:
    """The prebuilt wheel for this torch where one exists, else a build that sees torch."""
    torch = facts.torch.data
    if fa.family != Family.FA2:
        return [Remedy(summary=f"Reinstall {fa.distribution} from a build with CUDA (nvcc of "
                       "torch's CUDA major) and `--no-build-isolation`, so that the build sees "
                       "torch; `fadoctor fix --family` plans it.")]
    exact = exact_wheel(facts, matrix, torch) if torch is not None and not cpu_only else None
    if exact is not None:
        return [exact]
    build = installed_build(version(torch.version) if torch else None,
                            torch.cuda if torch else None, torch.cxx11_abi if torch else None)
    release, commands = (build_recipe(build, from_facts(facts), matrix, version(fa.version))
                         if build is not None else (None, []))
    if release is None or build is None:
        return [Remedy(summary="After a CUDA torch is installed, `fadoctor fix --keep-torch "
                       "--print-pins` prints the prebuilt wheel for it or the build recipe; a "
                       "plain --force-reinstall rebuilds under build isolation, without torch, "
                       "and fails.", commands=[command("fadoctor", "fix", "--keep-torch",
                                                      "--print-pins")])]
    return [Remedy(summary=f"No prebuilt wheel fits this torch: build flash-attn "
                   f"{release.version} where the build sees torch (--no-build-isolation) and "
                   f"nvcc {build.cuda.major}.x and ninja.",
                   commands=[command("pip", "uninstall", "-y", "flash-attn"), *commands])]
