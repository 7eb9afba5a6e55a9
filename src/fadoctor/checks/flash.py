"""Checks of the installed flash-attention families: present, importable, fit for GPU and torch."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from packaging.version import Version

from fadoctor.archs import arch_runs_on
from fadoctor.checks.base import Outcome, Skip, info, release, unreported, version
from fadoctor.checks.classify import failure_text
from fadoctor.checks.dependencies import missing_dependency
from fadoctor.checks.import_remedies import CSRC, csrc_remedies, exact_wheel, import_remedies
from fadoctor.checks.incomplete import incomplete_install
from fadoctor.checks.load_cause import import_cause
from fadoctor.checks.remedies import remedy, sdpa_fallback
from fadoctor.checks.system import gpus
from fadoctor.facts.binaries import BinaryAnalysis
from fadoctor.facts.model import Facts, FailureKind, Family, FamilyImport, FlashAttention, Torch
from fadoctor.install.fa4 import fa4_requirement
from fadoctor.install.machine import from_facts
from fadoctor.install.torch import installed_build
from fadoctor.install.wheels import build_recipe, first_release_with_kernels, newest_release_with_wheel
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding, Remedy, Severity
from fadoctor.safety.shell import command, requirement


def installed(facts: Facts) -> List[FlashAttention]:
    return [fa for fa in facts.flash_attention if fa.installed]


def label(fa: FlashAttention, matrix: Matrix) -> str:
    name = fa.distribution or matrix.family_support(fa.family).name
    return f"{name} {fa.version}" if fa.version else name


def check_installed(facts: Facts, matrix: Matrix) -> Outcome:
    present = installed(facts)
    if present:
        return [info("installed: " + ", ".join(label(fa, matrix) for fa in present))]
    if any(fa.installed is None for fa in facts.flash_attention):
        return unreported("which flash-attention families are installed")
    devices = gpus(facts)
    if not devices:
        return Skip("needs an NVIDIA GPU to recommend a flash-attention family, and none was found")
    newest = max(cc for _, cc in devices)
    if newest < matrix.family_support(Family.FA2).min_cc:
        return [info(f"no flash-attention family supports {devices[0][0]} "
                     f"(sm_{newest.major}{newest.minor}); PyTorch SDPA is the attention path here")]
    remedies = _install_remedies(facts, matrix, newest)
    return [Finding(severity=Severity.WARNING, category=Category.NOT_INSTALLED,
                    message="no flash-attention package is installed in this environment",
                    evidence={"gpus": [name for name, _ in devices]}, remedies=remedies)]


def _install_remedies(facts: Facts, matrix: Matrix, cc: Version) -> List[Remedy]:
    """How to get flash-attention here: FA2 where a prebuilt wheel exists, FA4 on the GPUs it is
    written for."""
    torch = facts.torch.data
    tv = version(torch.version if torch else None)
    remedies: List[Remedy] = []
    if str(cc) in matrix.family_support(Family.FA4).tuned:
        cuda = version(torch.cuda if torch else None)
        remedies.append(remedy("FlashAttention-4 is written for Hopper and Blackwell and needs "
                               "no compilation (a beta: pinned, as pip installs a pre-release "
                               "only when pinned).", lambda: [command(
                                   "pip", "install", fa4_requirement(matrix, cuda))]))
    exact = exact_wheel(facts, matrix, torch, replace_installed=False) if torch else None
    newest = newest_release_with_wheel(matrix, tv) if tv is not None else None
    if exact is not None:
        remedies.append(exact)
    elif newest is not None:
        remedies.append(remedy(
            f"FlashAttention-2: {newest.version} is the newest release with a prebuilt wheel for "
            f"torch {release(tv) if tv else '?'} (setup.py fetches it).",
            lambda: [command("pip", "install", requirement("flash-attn", newest.version),
                             "--no-build-isolation")]))
    elif tv is not None and torch is not None:
        remedies.extend(_build_remedy(facts, matrix, torch))
    remedies.append(sdpa_fallback("Or train without flash-attn."))
    return remedies


def _build_remedy(facts: Facts, matrix: Matrix, torch: Torch) -> List[Remedy]:
    """No wheel for this torch: the build `fadoctor fix` would print, narrowed to this GPU."""
    tv = version(torch.version)
    build = installed_build(tv, torch.cuda, torch.cxx11_abi)
    if tv is None or build is None:
        return []
    rel, commands = build_recipe(build, from_facts(facts), matrix, None)
    if rel is None:
        return []
    return [remedy(f"FlashAttention-2: no release has a prebuilt wheel for torch {release(tv)}; "
                   f"compile {rel.version} here (nvcc {build.cuda.major}.x and ninja; MAX_JOBS "
                   "sized to this machine's memory).", lambda: commands)]


def check_import(facts: Facts, matrix: Matrix) -> Outcome:
    if facts.mode == "static":
        return Skip("needs the real imports, and check --static imports nothing")
    present = installed(facts)
    if not present:
        return Skip("needs an installed flash-attention family, and none is installed")
    torch = facts.torch.data
    findings: List[Finding] = []
    unexamined: List[str] = []
    for fa in present:
        probe = fa.imported
        if probe is not None and probe.ok and probe.data is not None:
            ext = f" (extension {probe.data.extension})" if probe.data.extension else ""
            findings.append(info(f"{label(fa, matrix)}: import {probe.data.module} works{ext}",
                                 module=probe.data.module, file=probe.data.file))
            findings.extend(_extension_findings(fa, probe.data, facts, matrix))
            continue
        failure = probe.failure if probe is not None else None
        if failure is None:
            continue
        if failure.kind == FailureKind.SKIPPED:
            unexamined.append(f"{label(fa, matrix)} was not imported: {failure.reason}")
            continue
        incomplete = incomplete_install(fa, facts, matrix, label(fa, matrix),
                                        gpu_refusal(fa, facts, matrix))
        if incomplete is not None:  # before any reading of the error: the RECORD says why
            findings.append(incomplete)
            continue
        diagnosis = import_cause(failure_text(failure), _family_binaries(facts, fa), torch)
        dependency = missing_dependency(fa, diagnosis, facts, matrix)
        diagnosis, remedies = dependency or (diagnosis, import_remedies(fa, diagnosis, facts,
                                                                        matrix))
        what = diagnosis.explanation if diagnosis.recognised else " ".join(
            f"{failure.exception_type or ''}: {failure.reason}".strip(": ").split())
        findings.append(Finding(
            severity=Severity.ERROR, category=diagnosis.category, subject=fa.family.value,
            message=f"{label(fa, matrix)} fails to import ({_how(failure.kind, failure.signal)}): "
                    f"{what}",
            evidence={"error": failure.reason, "exception": failure.exception_type,
                      "torch": torch.version if torch else None,
                      "torch_cxx11_abi": torch.cxx11_abi if torch else None,
                      "stderr_tail": failure.stderr_tail, **diagnosis.details},
            remedies=remedies))
    if unexamined and not any(f.severity == Severity.ERROR for f in findings):
        # Never a pass for a family that was not imported: skipped, with the reason.
        return Skip("needs each installed family imported, and " + "; ".join(unexamined))
    return findings + [info(text) for text in unexamined]


def _extension_findings(fa: FlashAttention, imported: FamilyImport, facts: Facts,
                        matrix: Matrix) -> List[Finding]:
    """The package imports, but a compiled extension of it does not (flash-attention#236)."""
    torch = facts.torch.data
    out = []
    for ext in imported.extensions:
        if ext.ok:
            continue
        diagnosis = import_cause(ext.error or "", [b for b in _family_binaries(facts, fa)
                                                   if b.file.module == ext.module], torch)
        remedies = (csrc_remedies(ext.module) if ext.module in CSRC
                    else import_remedies(fa, diagnosis, facts, matrix))
        out.append(Finding(
            severity=Severity.ERROR, category=diagnosis.category, subject=ext.module,
            message=f"{label(fa, matrix)} imports, but its extension {ext.module} does not: "
                    f"{diagnosis.explanation}",
            evidence={"error": ext.error, "exception": ext.exception_type, **diagnosis.details},
            remedies=remedies))
    return out


def _family_binaries(facts: Facts, fa: FlashAttention) -> List[BinaryAnalysis]:
    binaries = facts.binaries.data if facts.binaries is not None else None
    return [b for b in binaries or [] if b.file.family == fa.family]


def _how(kind: FailureKind, signal: Optional[str]) -> str:
    return {FailureKind.CRASH: f"the interpreter died from {signal}",
            FailureKind.TIMEOUT: "the import hung and was killed",
            FailureKind.EXIT: "the interpreter exited"}.get(kind, kind.value.replace("_", " "))


def installed_family(facts: Facts, family: Optional[Family]) -> Optional[FlashAttention]:
    fa = facts.family(family) if family is not None else None
    return fa if fa is not None and fa.installed else None


def check_gpu_support(facts: Facts, matrix: Matrix) -> Outcome:
    present = installed(facts)
    if not present:
        return Skip("needs an installed flash-attention family, and none is installed")
    devices = gpus(facts)
    if not devices:
        return Skip("needs a GPU with a known compute capability, and none was found")
    findings: List[Finding] = []
    for fa in present:
        for name, cc in sorted(dict.fromkeys(devices), key=lambda d: d[1]):
            findings.append(_gpu_finding(fa, name, cc, matrix))
    return findings


def gpu_refusal(fa: FlashAttention, facts: Facts, matrix: Matrix) -> Optional[Finding]:
    """FAD112's verdict where it is that no release of this family runs on a GPU here (the
    matrix's support test); None where every GPU is served, or none is known."""
    for name, cc in sorted(dict.fromkeys(gpus(facts)), key=lambda d: d[1]):
        verdict = _gpu_finding(fa, name, cc, matrix)
        if verdict.severity == Severity.ERROR and verdict.category == Category.GPU_UNSUPPORTED:
            return verdict
    return None


def _gpu_finding(fa: FlashAttention, gpu: str, cc: Version, matrix: Matrix) -> Finding:
    support = matrix.family_support(fa.family)
    floor = support.floor(version(fa.version))
    arch = f"sm_{cc.major}{cc.minor}"
    evidence = {"gpu": gpu, "compute_capability": str(cc), "min_cc": str(floor),
                "max_cc": str(support.max_cc) if support.max_cc else None,
                "source": support.source}
    what = label(fa, matrix)
    if cc < floor or (support.max_cc is not None and cc > support.max_cc):
        bound = (f"needs compute capability >= {floor}" if cc < floor
                 else f"has no kernels beyond compute capability {support.max_cc}")
        return Finding(
            severity=Severity.ERROR, category=Category.GPU_UNSUPPORTED, subject=fa.family.value,
            message=f"{what} does not run on {gpu} ({arch}): it {bound}",
            evidence=evidence, remedies=_unsupported_remedies(fa.family, cc, matrix))
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
                    remedies=_first_with_kernels(matrix, cc, "--no-cache-dir"))
    if fa.family == Family.FA4 and fv is not None:
        gated = _fa4_gate(fa, fv, gpu, cc, matrix, evidence)
        if gated is not None:
            return gated
    if str(cc) not in support.tuned:
        return Finding(
            severity=Severity.INFO, category=Category.INFO, subject=fa.family.value,
            message=f"{what} accepts {gpu} ({arch}), though it is written for "
                    f"{', '.join('sm_' + t.replace('.', '') for t in support.tuned)}",
            evidence=evidence)
    return info(f"{what} supports {gpu} ({arch})", **evidence)


def _fa4_gate(fa: FlashAttention, fv: Version, gpu: str, cc: Version, matrix: Matrix,
              evidence: Dict[str, Any]) -> Optional[Finding]:
    """FlashAttention-4's own gates, per beta and per direction: interface.py asserts the GPU's
    compute capability major in _flash_attn_fwd and, with a shorter list, in _flash_attn_bwd
    (no backward on 8.x at any beta): such a GPU runs inference, and training fails."""
    beta = matrix.fa4_release(fv)
    if beta is None:
        return None
    what, arch = label(fa, matrix), f"sm_{cc.major}{cc.minor}"
    evidence = {**evidence, "forward_cc_majors": beta.forward_cc_majors,
                "backward_cc_majors": beta.backward_cc_majors, "gate_source": beta.source}
    if beta.accepts(cc.major, "forward") is False:
        return Finding(
            severity=Severity.ERROR, category=Category.GPU_UNSUPPORTED, subject=fa.family.value,
            message=f"{what} refuses {gpu} ({arch}): its forward accepts compute capability "
                    f"{_majors(beta.forward_cc_majors)} only ('Unsupported compute capability')",
            evidence=evidence, remedies=[sdpa_fallback("")])
    if beta.accepts(cc.major, "backward") is False:
        return Finding(
            severity=Severity.WARNING, category=Category.GPU_UNSUPPORTED, subject=fa.family.value,
            message=f"{what} runs only the forward (inference) on {gpu} ({arch}): its backward "
                    f"accepts compute capability {_majors(beta.backward_cc_majors)} only, so "
                    "training fails ('Unsupported compute capability')",
            evidence=evidence,
            remedies=[Remedy(summary="To train on this GPU use FlashAttention-2 (flash-attn 2.x)"
                             " or PyTorch SDPA; FlashAttention-4 serves inference here."),
                      sdpa_fallback("")])
    return None


def _majors(majors: List[int]) -> str:
    return ", ".join(f"{m}.x" for m in majors)


def _unsupported_remedies(family: Family, cc: Version, matrix: Matrix) -> List[Remedy]:
    if cc < matrix.family_support(Family.FA2).min_cc:
        remedies = [sdpa_fallback("No flash-attention 2.x/3/4 build runs on GPUs older than "
                                  "Ampere.")]
        if cc >= Version("7.5"):
            remedies.append(Remedy(summary="FlashAttention 1.x supports Turing (sm_75), with its "
                                   "own, older API.",
                                   commands=[command("pip", "install", "flash-attn<2")]))
        return remedies
    if family == Family.FA3:
        tuned = ", ".join(f"sm_{t.replace('.', '')}" for t in matrix.family_support(family).tuned)
        return [Remedy(summary=f"FlashAttention-3 targets {tuned} only; on this GPU use "
                       "FlashAttention-2 or FlashAttention-4."),
                *_first_with_kernels(matrix, cc)]
    return [sdpa_fallback("")]


def _first_with_kernels(matrix: Matrix, cc: Version, *flags: str) -> List[Remedy]:
    """The first FA2 release whose wheels carry kernels for this GPU, from the matrix."""
    first = first_release_with_kernels(matrix, cc)
    if first is None:
        return []
    archs = ", ".join(a for a in first.archs if arch_runs_on(a, (cc.major, cc.minor)))
    return [Remedy(summary=f"flash-attn {first.version} is the first release whose wheels carry "
                   f"{archs} kernels.",
                   commands=[command("pip", "install", requirement("flash-attn", first.version,
                                                                   op=">="),
                                     "--no-build-isolation", *flags)])]
