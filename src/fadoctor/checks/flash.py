"""Checks of the installed flash-attention families: present, importable, fit for GPU and torch."""

from __future__ import annotations

from typing import List, Optional

from packaging.version import Version

from fadoctor.checks.base import Outcome, Skip, info, release, version, why_unknown
from fadoctor.checks.classify import Diagnosis, classify
from fadoctor.checks.remedies import (
    newest_release_with_wheel,
    reinstall_flash_attn,
    sdpa_fallback,
)
from fadoctor.checks.system import gpus
from fadoctor.facts import Facts, FailureKind, Family, FlashAttention
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity

INSTALL = {
    Family.FA2: "pip install flash-attn --no-build-isolation",
    Family.FA4: "pip install flash-attn-4",
}


def installed(facts: Facts) -> List[FlashAttention]:
    return [fa for fa in facts.flash_attention if fa.installed]


def label(fa: FlashAttention, matrix: Matrix) -> str:
    name = fa.distribution or matrix.family_support(fa.family).name
    return f"{name} {fa.version}" if fa.version else name


def check_installed(facts: Facts, matrix: Matrix) -> Outcome:
    present = installed(facts)
    if present:
        return [info("installed: " + ", ".join(label(fa, matrix) for fa in present))]
    devices = gpus(facts)
    if not devices:
        return Skip("needs an NVIDIA GPU to recommend a flash-attention family, and none was found")
    newest = max(cc for _, cc in devices)
    if newest < matrix.family_support(Family.FA2).min_cc:
        return [info(f"no flash-attention family supports {devices[0][0]} "
                     f"(sm_{newest.major}{newest.minor}); PyTorch SDPA is the attention path here")]
    hopper_plus = newest >= Version("9.0")
    remedies = [Remedy(summary="Install FlashAttention-2 (setup.py fetches the prebuilt wheel for "
                       "this torch, or compiles it).", commands=[INSTALL[Family.FA2]])]
    if hopper_plus:
        remedies.append(Remedy(summary="On Hopper and Blackwell, FlashAttention-4 is an option.",
                               commands=[INSTALL[Family.FA4]]))
    remedies.append(sdpa_fallback("Or train without flash-attn."))
    return [Finding(severity=Severity.WARNING, category=Category.NOT_INSTALLED,
                    message="no flash-attention package is installed in this environment",
                    evidence={"gpus": [name for name, _ in devices]}, remedies=remedies)]


def check_import(facts: Facts, matrix: Matrix) -> Outcome:
    present = installed(facts)
    if not present:
        return Skip("needs an installed flash-attention family, and none is installed")
    torch = facts.torch.data
    findings: List[Finding] = []
    for fa in present:
        probe = fa.imported
        if probe is not None and probe.ok and probe.data is not None:
            ext = f" (extension {probe.data.extension})" if probe.data.extension else ""
            findings.append(info(f"{label(fa, matrix)}: import {probe.data.module} works{ext}",
                                 module=probe.data.module, file=probe.data.file))
            continue
        failure = probe.failure if probe is not None else None
        if failure is None:
            continue
        if failure.kind == FailureKind.SKIPPED:
            findings.append(info(f"{label(fa, matrix)}: not imported, {failure.reason}"))
            continue
        text = failure.reason if failure.kind == FailureKind.IMPORT_ERROR else (
            failure.stderr_tail or failure.reason)
        diagnosis = classify(text, torch.cxx11_abi if torch else None)
        findings.append(Finding(
            severity=Severity.ERROR, category=diagnosis.category, subject=fa.family.value,
            message=f"{label(fa, matrix)} fails to import ({_how(failure.kind, failure.signal)}): "
                    f"{diagnosis.explanation}",
            evidence={"error": failure.reason, "exception": failure.exception_type,
                      "torch": torch.version if torch else None,
                      "torch_cxx11_abi": torch.cxx11_abi if torch else None,
                      "stderr_tail": failure.stderr_tail, **diagnosis.details},
            remedies=_import_remedies(fa, diagnosis, facts, matrix)))
    return findings


def _how(kind: FailureKind, signal: Optional[str]) -> str:
    return {FailureKind.CRASH: f"the interpreter died from {signal}",
            FailureKind.TIMEOUT: "the import hung and was killed",
            FailureKind.EXIT: "the interpreter exited"}.get(kind, kind.value.replace("_", " "))


def _import_remedies(fa: FlashAttention, diagnosis: Diagnosis, facts: Facts, matrix: Matrix
                     ) -> List[Remedy]:
    torch = facts.torch.data
    tv = version(torch.version if torch else None)
    if fa.family != Family.FA2 or fa.version is None or tv is None:
        return [Remedy(summary=f"Reinstall {fa.distribution or fa.family.value} built for torch "
                       f"{torch.version if torch else '(unknown)'}, or build it from source in "
                       "this environment."),
                sdpa_fallback("Meanwhile:")]
    remedies = [reinstall_flash_attn(fa.version)]
    category = diagnosis.category
    if category == Category.CXX11_ABI_MISMATCH and torch is not None:
        abi = str(bool(torch.cxx11_abi)).upper()
        remedies.insert(0, Remedy(
            summary=f"If you install a release wheel by hand, take the one named "
                    f"cxx11abi{abi} (this torch's _GLIBCXX_USE_CXX11_ABI); the others cannot load."))
        if tv is not None and release(tv) == Version("2.6") and not torch.cxx11_abi:
            remedies.insert(0, Remedy(
                summary="flash-attn 2.8.x wheels for torch 2.6 labelled cxx11abiFALSE were built "
                        "against an ABI-1 torch; with pip's torch 2.6 (ABI 0) use 2.7.4.post1.",
                commands=["pip install flash-attn==2.7.4.post1 --no-build-isolation "
                          "--no-cache-dir"]))
    if category == Category.GLIBC_TOO_OLD:
        older = newest_release_with_wheel(matrix, tv, builds_on="ubuntu-20.04")
        if older is not None:
            remedies.insert(0, Remedy(
                summary=f"flash-attn {older.version} is the newest release whose wheels were built "
                        f"on Ubuntu 20.04 (glibc 2.31) for torch {release(tv)}.",
                commands=[f"pip install flash-attn=={older.version} --no-build-isolation "
                          "--no-cache-dir"]))
        remedies.append(Remedy(
            summary="Or compile it on this machine, so it links against this glibc.",
            commands=[f"FLASH_ATTENTION_FORCE_BUILD=TRUE pip install flash-attn=={fa.version} "
                      "--no-build-isolation --no-cache-dir"]))
    if category == Category.TORCH_VERSION_MISMATCH:
        rel = matrix.fa_release(Version(fa.version))
        if rel is not None and str(release(tv)) not in rel.wheel_torch:
            newest = newest_release_with_wheel(matrix, tv)
            if newest is not None:
                remedies.insert(0, Remedy(
                    summary=f"flash-attn {fa.version} has no prebuilt wheel for torch "
                            f"{release(tv)}; {newest.version} is the newest release that has one.",
                    commands=[f"pip install flash-attn=={newest.version} --no-build-isolation "
                              "--no-cache-dir"]))
    remedies.append(sdpa_fallback("Meanwhile:"))
    return remedies


def check_gpu_support(facts: Facts, matrix: Matrix) -> Outcome:
    present = installed(facts)
    if not present:
        return Skip("needs an installed flash-attention family, and none is installed")
    devices = gpus(facts)
    if not devices:
        return Skip("needs a GPU with a known compute capability, and none was found")
    findings: List[Finding] = []
    for fa in present:
        for name, cc in sorted(set(devices), key=lambda d: d[1]):
            findings.append(_gpu_finding(fa, name, cc, matrix))
    return findings


def _gpu_finding(fa: FlashAttention, gpu: str, cc: Version, matrix: Matrix) -> Finding:
    support = matrix.family_support(fa.family)
    arch = f"sm_{cc.major}{cc.minor}"
    evidence = {"gpu": gpu, "compute_capability": str(cc), "min_cc": str(support.min_cc),
                "max_cc": str(support.max_cc) if support.max_cc else None,
                "source": support.source}
    what = label(fa, matrix)
    if cc < support.min_cc or (support.max_cc is not None and cc > support.max_cc):
        bound = (f"needs compute capability >= {support.min_cc}" if cc < support.min_cc
                 else f"has no kernels beyond compute capability {support.max_cc}")
        return Finding(
            severity=Severity.ERROR, category=Category.GPU_UNSUPPORTED, subject=fa.family.value,
            message=f"{what} does not run on {gpu} ({arch}): it {bound}",
            evidence=evidence, remedies=_unsupported_remedies(fa.family, cc))
    fv = version(fa.version)
    if fa.family == Family.FA2 and fv is not None:
        for gate in matrix.fa2_arch_gate:
            if fv in gate.versions and cc.major not in gate.allowed_cc_majors:
                return Finding(
                    severity=Severity.ERROR, category=Category.GPU_UNSUPPORTED,
                    subject=fa.family.value,
                    message=f"{what} rejects {gpu} ({arch}) at run time: releases {gate.versions} "
                            "accept only sm8x and sm90 ('FlashAttention only supports Ampere "
                            "GPUs or newer')",
                    evidence={**evidence, "gate_source": gate.source},
                    remedies=[Remedy(summary="flash-attn 2.8.0 is the first release whose wheels "
                                     "carry Blackwell (sm_100, sm_120) kernels.",
                                     commands=['pip install "flash-attn>=2.8.0" '
                                               "--no-build-isolation --no-cache-dir"])])
    if str(cc) not in support.tuned:
        return Finding(
            severity=Severity.INFO, category=Category.INFO, subject=fa.family.value,
            message=f"{what} accepts {gpu} ({arch}), though it is written for "
                    f"{', '.join('sm_' + t.replace('.', '') for t in support.tuned)}",
            evidence=evidence)
    return info(f"{what} supports {gpu} ({arch})", **evidence)


def _unsupported_remedies(family: Family, cc: Version) -> List[Remedy]:
    if cc < Version("8.0"):
        remedies = [sdpa_fallback("No flash-attention 2.x/3/4 build runs on GPUs older than "
                                  "Ampere.")]
        if cc >= Version("7.5"):
            remedies.append(Remedy(summary="FlashAttention 1.x supports Turing (sm_75), with its "
                                   "own, older API.", commands=['pip install "flash-attn<2"']))
        return remedies
    if family == Family.FA3:
        return [Remedy(summary="FlashAttention-3 targets Hopper only; on this GPU use "
                       "FlashAttention-2 (>= 2.8.0 for Blackwell) or FlashAttention-4.",
                       commands=['pip install "flash-attn>=2.8.0" --no-build-isolation'])]
    return [sdpa_fallback("")]


def check_requirements(facts: Facts, matrix: Matrix) -> Outcome:
    present = installed(facts)
    if not present:
        return Skip("needs an installed flash-attention family, and none is installed")
    torch = facts.torch.data
    if torch is None:
        return why_unknown("torch", facts.torch)
    tv = version(torch.version)
    if tv is None:
        return Skip(f"needs a readable torch version; got {torch.version!r}")
    findings: List[Finding] = []
    for fa in present:
        findings.extend(_requirement_findings(fa, tv, facts, matrix))
    return findings


def _requirement_findings(fa: FlashAttention, tv: Version, facts: Facts, matrix: Matrix
                          ) -> List[Finding]:
    what, minor = label(fa, matrix), str(release(tv))
    fv = version(fa.version)
    req = matrix.requirement(fa.family)
    out: List[Finding] = []
    if req is not None and req.min_torch is not None and tv < req.min_torch:
        out.append(Finding(severity=Severity.ERROR, category=Category.TORCH_VERSION_MISMATCH,
                           subject=fa.family.value,
                           message=f"{what} needs torch >= {req.min_torch}; this is {tv}",
                           evidence={"torch": str(tv), "source": req.source}))
    py = version(facts.host.data.python_version if facts.host.data else None)
    if req is not None and req.min_python is not None and py is not None and py < req.min_python:
        out.append(Finding(severity=Severity.ERROR, category=Category.PLATFORM_UNSUPPORTED,
                           subject=fa.family.value,
                           message=f"{what} needs Python >= {req.min_python}; this is {py}",
                           evidence={"python": str(py), "source": req.source}))
    if fa.family != Family.FA2 or fv is None:
        return out or [info(f"{what}: no version requirement known beyond the above")]
    rel = matrix.fa_release(fv)
    if rel is None:
        return out + [info(f"{what} is not a tagged flash-attn release fadoctor knows (a fork, "
                           "a dev build or newer than the matrix)", version=str(fv))]
    if tv < rel.readme_min_torch:
        out.append(Finding(
            severity=Severity.WARNING, category=Category.TORCH_VERSION_MISMATCH,
            subject=fa.family.value,
            message=f"{what} documents torch >= {rel.readme_min_torch}; this is {tv}",
            evidence={"torch": str(tv), "source": rel.source}))
    if minor in rel.wheel_torch:
        out.append(info(f"{what} has prebuilt wheels for torch {minor}",
                        wheel_torch=rel.wheel_torch, source=rel.source))
    else:
        out.append(info(f"{what} has no prebuilt wheel for torch {minor} (wheels: "
                        f"{', '.join(rel.wheel_torch)}): this copy was compiled here or taken from "
                        "another torch, and must be rebuilt after every torch upgrade",
                        wheel_torch=rel.wheel_torch, source=rel.source))
    return out
