"""Checks of the machine and the PyTorch build: driver, CUDA runtime, GPU visibility and archs."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Tuple

from packaging.version import Version

from fadoctor.archs import arch_name, arch_runs_on
from fadoctor.checks.base import Outcome, Skip, info, torch_view, unreported, version, why_unknown
from fadoctor.checks.classify import classify, failure_text
from fadoctor.checks.remedies import remedy, torch_variant_remedies
from fadoctor.facts.model import Distribution, Facts, FailureKind
from fadoctor.install.torch import cuda_of_variant, index_args, torch_install
from fadoctor.install.views import driver_version
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity
from fadoctor.safety import shell
from fadoctor.safety.shell import command, requirement

GpuCc = Tuple[str, Version]  # (name, compute capability)


def gpus(facts: Facts) -> List[GpuCc]:
    """The GPUs training would use: torch's view (CUDA_VISIBLE_DEVICES applies), else NVML's."""
    torch = facts.torch.data
    if torch and torch.devices:
        return [(d.name, Version(d.capability)) for d in torch.devices]
    driver = facts.driver.data
    if driver and driver.present:
        return [(g.name, Version(g.compute_capability)) for g in driver.gpus or []
                if g.compute_capability]
    return []


def _rocm(facts: Facts) -> bool:
    return bool(facts.torch.data and facts.torch.data.hip)


def check_driver(facts: Facts, matrix: Matrix) -> Outcome:
    if not facts.driver.ok or facts.driver.data is None:
        return why_unknown("the NVIDIA driver probe", facts.driver)
    driver = facts.driver.data
    if _rocm(facts):
        return [Finding(severity=Severity.INFO, category=Category.ROCM,
                        message="torch is a ROCm build: the NVIDIA driver does not apply",
                        evidence={"hip": facts.torch.data.hip if facts.torch.data else None})]
    if not driver.present:
        return [Finding(
            severity=Severity.ERROR, category=Category.NO_GPU,
            message="no NVIDIA driver found: flash-attention needs an NVIDIA GPU and its driver",
            evidence={"detail": driver.detail},
            remedies=[Remedy(summary="Run on a machine with an NVIDIA GPU (Ampere or newer for "
                             "FlashAttention-2) and its driver installed; in a container, start "
                             "it with the GPUs passed through.",
                             commands=[command("nvidia-smi")])])]
    if driver.source == "nvml" and driver.gpus == []:
        return [Finding(severity=Severity.ERROR, category=Category.NO_GPU,
                        message=f"NVIDIA driver {driver.version} is loaded but reports no GPU",
                        evidence={"driver": driver.version})]
    names = ", ".join(f"{g.name} (sm_{(g.compute_capability or '?').replace('.', '')})"
                      for g in driver.gpus or [])
    return [info(f"NVIDIA driver {driver.version}" + (f"; GPUs: {names}" if names else ""),
                 driver=driver.version, cuda=driver.cuda_version, source=driver.source)]


def check_torch_import(facts: Facts, matrix: Matrix) -> Outcome:
    probe = facts.torch
    if probe.ok and probe.data is not None:
        t = probe.data
        build = f"CUDA {t.cuda}" if t.cuda else (f"ROCm {t.hip}" if t.hip else "CPU only")
        return [info(f"torch {t.version} imports ({build}, C++11 ABI {t.cxx11_abi})",
                     version=t.version, cuda=t.cuda, file=t.file)]
    failure = probe.failure
    assert failure is not None
    if failure.kind == FailureKind.SKIPPED:
        return Skip(f"torch was {failure.reason}")
    diagnosis = classify(failure_text(failure))
    packages = facts.packages.data
    dist = packages.get("torch") if packages is not None else None
    installed = dist.version if dist is not None else None
    if diagnosis.category == Category.NOT_INSTALLED or (
            failure.exception_type == "ModuleNotFoundError" and "torch" in failure.reason):
        install = Remedy(summary="Install a CUDA build of PyTorch in this environment "
                         "(fadoctor never installs anything itself).",
                         commands=[command("pip", "install", "torch")])
        if facts.target.chosen_by == "current":  # no venv or conda env was active
            return [Finding(
                severity=Severity.ERROR, category=Category.NOT_INSTALLED,
                message="torch is not installed in the environment fadoctor runs from, examined "
                        "because no virtualenv or conda env is active",
                evidence={"python": facts.target.python, "error": failure.reason},
                remedies=[Remedy(summary="Examine the environment you train in: activate it and "
                                 "run fadoctor check again, or run fadoctor check --python PATH "
                                 "with its interpreter or folder.")])]
        return [Finding(
            severity=Severity.ERROR, category=Category.NOT_INSTALLED,
            message="torch is not installed in the target environment",
            evidence={"python": facts.target.python, "error": failure.reason},
            remedies=[install])]
    return [Finding(
        severity=Severity.ERROR, category=diagnosis.category,
        message=f"import torch failed ({failure.kind.value}): {failure.reason}",
        evidence={"kind": failure.kind.value, "signal": failure.signal,
                  "stderr_tail": failure.stderr_tail, **diagnosis.details},
        remedies=[remedy(f"{diagnosis.explanation}. Reinstall torch in a clean environment"
                         + (f" (the installed {installed}, with its libraries)." if installed
                            else "."), lambda: [command(
                                "pip", "install", "--force-reinstall",
                                *([requirement("torch", installed), *index_args(installed)]
                                  if installed else ["torch"]))])])]


def check_torch_cuda_build(facts: Facts, matrix: Matrix) -> Outcome:
    torch = torch_view(facts)  # imported, or read from its files
    if torch is None:
        return why_unknown("torch", facts.torch)
    if torch.cuda:
        return [info(f"torch is built with CUDA {torch.cuda}", cuda=torch.cuda)]
    if torch.hip:
        return [Finding(severity=Severity.WARNING, category=Category.ROCM,
                        message=f"torch is a ROCm build (HIP {torch.hip}): flash-attention on AMD "
                        "GPUs uses its ROCm backends (Composable Kernel or Triton)",
                        evidence={"hip": torch.hip})]
    return [Finding(
        severity=Severity.ERROR, category=Category.TORCH_CPU_ONLY,
        message=f"torch {torch.version} is a CPU-only build: no CUDA kernels, no flash-attention",
        evidence={"torch": torch.version, "cuda": None},
        remedies=torch_variant_remedies(matrix, facts, "Replace it with a CUDA build."))]


def check_driver_cuda(facts: Facts, matrix: Matrix) -> Outcome:
    torch = torch_view(facts)  # imported, or read from its files
    if torch is None:
        return why_unknown("torch", facts.torch)
    if not torch.cuda:
        return Skip("needs a CUDA build of torch; this one has no CUDA runtime")
    drv = facts.driver.data
    if drv is None or not drv.present or not drv.version:
        return Skip("needs the NVIDIA driver version, which is unknown (no driver found)")
    cuda, have = version(torch.cuda), driver_version(facts)
    if cuda is None:
        return Skip(f"needs a readable CUDA version of torch; got {torch.cuda!r}")
    if have is None:
        return Skip(f"needs a readable driver version; got {drv.version!r}")
    floor = matrix.driver_floor(cuda.major)
    toolkit = matrix.toolkit_driver(cuda)
    evidence = {"driver": drv.version, "driver_cuda": drv.cuda_version, "torch_cuda": torch.cuda}
    if floor is None:
        return [Finding(severity=Severity.WARNING, category=Category.INTERNAL,
                        message=f"fadoctor's matrix has no driver minimum for CUDA {cuda.major}",
                        evidence=evidence)]
    floor_text = str(floor.min_driver)
    own = str(toolkit.min_driver) if toolkit is not None else None
    if have < floor.min_driver:
        return [Finding(
            severity=Severity.ERROR, category=Category.DRIVER_TOO_OLD,
            message=f"driver {drv.version} is too old for torch's CUDA {torch.cuda}: any CUDA "
                    f"{cuda.major}.x runtime needs driver >= {floor_text}",
            evidence={**evidence, "min_driver": floor_text, "source": floor.source},
            remedies=[Remedy(summary=f"Upgrade the NVIDIA driver to >= {own or floor_text}, or "
                             "install a torch build for an older CUDA that this driver runs.")]
            + torch_variant_remedies(matrix, facts, "Or keep the driver:"))]
    if toolkit is not None and have < toolkit.min_driver and cuda.major < 11:
        # no minor-version compatibility before CUDA 11: a runtime needs its toolkit's driver
        return [Finding(
            severity=Severity.ERROR, category=Category.DRIVER_TOO_OLD,
            message=f"driver {drv.version} is too old for torch's CUDA {torch.cuda}: before CUDA "
                    f"11 each runtime needs its own toolkit's driver, >= {own}",
            evidence={**evidence, "toolkit_driver": own, "source": toolkit.source},
            remedies=[Remedy(summary=f"Upgrade the NVIDIA driver to >= {own}.")]
            + torch_variant_remedies(matrix, facts, "Or keep the driver:"))]
    if toolkit is not None and have < toolkit.min_driver:
        return [Finding(
            severity=Severity.WARNING, category=Category.DRIVER_TOO_OLD,
            message=f"driver {drv.version} is older than CUDA {torch.cuda}'s own driver "
                    f"({own}): it runs under minor-version compatibility, with a "
                    "limited feature set and no JIT of newer PTX",
            evidence={**evidence, "toolkit_driver": own, "source": toolkit.source},
            remedies=[Remedy(summary=f"Upgrade the NVIDIA driver to >= {own}.")])]
    return [info(f"driver {drv.version} runs CUDA {torch.cuda}", **evidence)]


def check_torch_sees_gpu(facts: Facts, matrix: Matrix) -> Outcome:
    torch, drv = facts.torch.data, facts.driver.data
    if torch is None:
        return why_unknown("torch", facts.torch)
    if not torch.cuda:
        return Skip("needs a CUDA build of torch")
    if drv is None or not drv.present:
        return Skip("needs an NVIDIA driver, and none was found")
    if torch.cuda_available is None:
        return unreported("torch.cuda.is_available()")
    if torch.cuda_available:
        devices = torch.devices or []
        count = torch.device_count if torch.device_count is not None else len(devices)
        names = ", ".join(f"{d.index}: {d.name}" for d in devices)
        return [info(f"torch sees {count} GPU(s): {names}")]
    env = (facts.host.data.environment if facts.host.data else None) or {}
    visible = env.get("CUDA_VISIBLE_DEVICES")
    driver_gpus = f"{len(drv.gpus)} GPU(s)" if drv.gpus is not None else "its GPUs"
    evidence = {"cuda_error": torch.cuda_error, "CUDA_VISIBLE_DEVICES": visible,
                "driver_gpus": len(drv.gpus) if drv.gpus is not None else None}
    if visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        return [Finding(severity=Severity.ERROR, category=Category.NO_GPU,
                        message=f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU from torch",
                        evidence=evidence,
                        remedies=[Remedy(summary="Unset it, or list the GPUs to use.",
                                         commands=[command("unset", "CUDA_VISIBLE_DEVICES")])])]
    too_old = "too old" in (torch.cuda_error or "")
    return [Finding(
        severity=Severity.ERROR,
        category=Category.DRIVER_TOO_OLD if too_old else Category.NO_GPU,
        message="torch.cuda.is_available() is False although the NVIDIA driver reports "
                f"{driver_gpus}" + (f": {torch.cuda_error}" if torch.cuda_error else ""),
        evidence=evidence)]


def runs_on(arch: str, cc: Version) -> bool:
    """Whether code for an arch (sm_90, sm_90a, sm_100f, compute_90) can run on a device."""
    return arch_runs_on(arch, (cc.major, cc.minor))


def check_torch_arch(facts: Facts, matrix: Matrix) -> Outcome:
    torch = facts.torch.data
    if torch is None:
        return why_unknown("torch", facts.torch)
    if torch.cuda and torch.arch_list is None:
        return unreported("torch's compiled arch list")
    if not torch.cuda or not torch.arch_list:
        return Skip("needs a CUDA build of torch with a compiled arch list")
    devices = gpus(facts)
    if not devices:
        return Skip("needs a GPU with a known compute capability, and none was found")
    findings: List[Finding] = []
    by_cc: Dict[Version, List[str]] = defaultdict(list)
    for name, cc in devices:
        by_cc[cc].append(name)
    for cc, names in sorted(by_cc.items()):
        arch = f"sm_{cc.major}{cc.minor}"
        if any(runs_on(a, cc) for a in torch.arch_list):
            findings.append(info(f"torch has kernels for {names[0]} ({arch})", arch=arch))
            continue
        findings.append(Finding(
            severity=Severity.ERROR, category=Category.NO_KERNEL_IMAGE,
            subject=names[0],
            message=f"torch {torch.version} has no kernels for {names[0]} ({arch}): its arch list "
                    f"is {' '.join(torch.arch_list)}; CUDA calls will fail with 'no kernel image "
                    "is available for execution on the device'",
            evidence={"arch_list": torch.arch_list, "compute_capability": str(cc)},
            remedies=_arch_remedies(facts, matrix, cc)))
    return findings


def _arch_remedies(facts: Facts, matrix: Matrix, cc: Version) -> List[Remedy]:
    torch = facts.torch.data
    v = version(torch.version if torch else None)
    rel = matrix.torch_release(v) if v else None
    if rel is None or v is None:
        return []
    fitting = [variant for variant, arches in rel.arch_lists.items()
               if any(runs_on(arch_name(a), cc) for a in arches.split(";"))]
    if not fitting:
        return [Remedy(summary=f"No CUDA build of torch {rel.minor} has kernels for "
                       f"sm_{cc.major}{cc.minor}; use another torch release.")]
    variant = max(fitting, key=cuda_of_variant)
    return [remedy(f"Install the {variant} build of torch {v.base_version}, which has kernels "
                   f"for sm_{cc.major}{cc.minor}.", lambda: [torch_install(v.base_version, variant)])]


def check_duplicates(facts: Facts, matrix: Matrix) -> Outcome:
    packages = facts.packages.data
    if packages is None:
        return why_unknown("the installed distributions", facts.packages)
    seen: Dict[str, List[str]] = defaultdict(list)
    for dist in packages.distributions:
        seen[dist.name].append(f"{dist.version} in {dist.location}")
    dupes = {dist: where for dist, where in seen.items() if len(where) > 1}
    overlaps = _overlaps(packages.distributions)
    if overlaps:
        in_use = {d.name: d.version for d in reversed(packages.distributions)}
        return [_duplicate(dist, where, in_use[dist]) for dist, where in sorted(dupes.items())] + overlaps
    if not dupes:
        count = len(packages.distributions)
        return [info(f"{count} relevant distribution{'' if count == 1 else 's'}, "
                     "each installed once",
                     distributions=[f"{d.name} {d.version}" for d in packages.distributions])]
    # Distributions are listed in sys.path order: the first of a name is the one imported.
    in_use = {d.name: d.version for d in reversed(packages.distributions)}
    return [_duplicate(dist, where, in_use[dist]) for dist, where in sorted(dupes.items())]


def _overlaps(dists: List[Distribution]) -> List[Finding]:
    """Family distributions whose RECORDs own the same files (the second install overwrote the
    first's): one finding per group of owners."""
    groups: Dict[Tuple[str, ...], List[str]] = defaultdict(list)
    for path in sorted({p for d in dists for p in d.shared_files or []}):
        owners = tuple(sorted({f"{d.name} {d.version}" for d in dists
                               if path in (d.shared_files or [])}))
        groups[owners].append(path)
    return [Finding(
        severity=Severity.WARNING, category=Category.VERSION_CONFLICT, subject=owners[0],
        message=f"{' and '.join(owners)} own the same files ({', '.join(paths[:3])}"
                f"{', ...' if len(paths) > 3 else ''}): whichever was installed last overwrote "
                "the other's, and uninstalling either removes files the other needs",
        evidence={"owners": list(owners), "shared_files": paths},
        remedies=[Remedy(summary="Keep one of them in this environment (flash-attn 2.x ships "
                         "flash_attn/cute/ at flash-attn-4's paths), then reinstall the one you "
                         "keep with --force-reinstall --no-deps.")])
        for owners, paths in sorted(groups.items()) if len(owners) > 1]


def _duplicate(dist: str, where: List[str], in_use: str) -> Finding:
    # `pip uninstall` removes the copy first on sys.path — the one in use — and keeps the stray:
    # so every copy goes, then the version in use comes back alone (--no-deps: nothing else moves).
    def commands() -> List[str]:
        uninstall = command("pip", "uninstall", "-y", shell.name(dist))
        return [uninstall] * len(where) + [command("pip", "install", "--no-deps",
                                                   requirement(dist, in_use))]
    return Finding(
        severity=Severity.WARNING, category=Category.VERSION_CONFLICT, subject=dist,
        message=f"{dist} is installed {len(where)} times: {'; '.join(where)} — the first on "
                "sys.path wins, and pip may report the other",
        evidence={"installs": where},
        remedies=[remedy(f"Keep the copy in use ({dist} {in_use}) alone: uninstall every copy "
                         f"(pip removes the one first on sys.path each time), then install "
                         f"{in_use} again. A copy outside this environment (PYTHONPATH, a "
                         "--target folder) pip will not remove: delete it there.", commands)])
