"""Checks that read the compiled extensions as files: libraries, symbols, glibc, GPU kernels, and
whether that static prediction agrees with the real import."""

from __future__ import annotations

from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.checks.base import Outcome, Skip, info, torch_view, why_unknown
from fadoctor.checks.classify import Diagnosis, symbol_version
from fadoctor.checks.dependencies import declared_library
from fadoctor.checks.ext_remedies import distribution_remedies
from fadoctor.checks.flash import installed_family
from fadoctor.checks.import_remedies import CSRC, import_remedies
from fadoctor.checks.load_cause import (
    first_cause,
    library_cause,
    split_symbols,
    symbol_cause,
    symbol_counts,
)
from fadoctor.checks.system import gpus, runs_on
from fadoctor.checks.variants import Judged, Judgement, Load, cap, judge
from fadoctor.facts.binaries import BinaryAnalysis
from fadoctor.facts.model import Facts, FailureKind
from fadoctor.matrix import Matrix
from fadoctor.matrix.fa2 import MODERN as WHEEL_LOCAL
from fadoctor.report import Category, Finding, Remedy, Severity
from fadoctor.safety.shell import AND, command, env, requirement

SHOWN_SYMBOLS = 6  # missing symbols listed in a message; evidence keeps what the probe kept


def _binaries(facts: Facts) -> List[BinaryAnalysis] | Skip:
    if facts.binaries is None:
        return Skip("needs the static analysis of the binaries, which these facts do not hold")
    if facts.binaries.data is None:
        return why_unknown("the static analysis of the binaries", facts.binaries)
    if not facts.binaries.data:
        return Skip("needs a compiled extension that links torch, and none was found")
    return facts.binaries.data


def _judged(facts: Facts) -> Judgement | Skip:
    """The binaries with how certain each is to be loaded (checks.variants)."""
    found = _binaries(facts)
    return found if isinstance(found, Skip) else judge(facts, found)


def name(binary: BinaryAnalysis) -> str:
    """A family's module name; else the distribution and the full path (never a bare _C.so)."""
    if binary.file.module:
        return binary.file.module
    owner = " ".join(filter(None, [binary.file.distribution, binary.file.version]))
    return f"{owner} {binary.file.path}" if owner else binary.file.path


def _diagnosed(judged: Judged, diagnosis: Diagnosis, message: str, facts: Facts,
               matrix: Matrix, severity: Severity = Severity.ERROR,
               remedies: Optional[List[Remedy]] = None, **evidence: object) -> Finding:
    """A prediction about one binary: at most a warning when nothing says it is loaded."""
    binary = judged.binary
    if judged.load is Load.MAYBE:
        message += f" — if it is loaded at all: {judged.why}"
    fa = installed_family(facts, binary.file.family)
    torch = torch_view(facts)
    if remedies is None:
        remedies = (import_remedies(fa, diagnosis, facts, matrix, torch) if fa
                    else distribution_remedies(binary, diagnosis, facts, torch))
    first = binary.first_failure
    return Finding(severity=cap(severity, judged), category=diagnosis.category,
                   subject=name(binary),
                   message=message, evidence={"path": binary.file.path, "distribution":
                                              binary.file.distribution, **evidence,
                                              "first_failure": first.message if first else None,
                                              **diagnosis.details}, remedies=remedies)


def check_libraries(facts: Facts, matrix: Matrix) -> Outcome:
    judgement = _judged(facts)
    if isinstance(judgement, Skip):
        return judgement
    torch = torch_view(facts)
    findings: List[Finding] = [*judgement.no_match, *judgement.notes]
    for judged in judgement.judged:
        binary = judged.binary
        if binary.error is not None:
            findings.append(Finding(severity=Severity.WARNING, category=Category.INTERNAL,
                                    subject=name(binary), evidence={"path": binary.file.path},
                                    message=f"{name(binary)} could not be read: {binary.error}"))
            continue
        missing = [lib for lib in binary.needed if lib.path is None]
        if not missing:
            loaded = sum(1 for lib in binary.needed if lib.how == "loaded")
            findings.append(info(f"{name(binary)}: its {len(binary.needed)} needed libraries "
                                 f"resolve ({loaded} already loaded by torch)",
                                 needed={lib.name: lib.path for lib in binary.needed}))
            continue
        first = missing[0]
        diagnosis = library_cause(binary, first.name, torch)
        declared = (declared_library(first.name, binary.file.distribution, diagnosis, facts)
                    if diagnosis.category == Category.WRONG_WHEEL and "beside" not in diagnosis.details
                    else None)
        diagnosis, remedies = declared if declared else (diagnosis, None)
        others = f" (also not found: {', '.join(lib.name for lib in missing[1:])})" if missing[1:] else ""
        by = f" (needed by {first.needed_by})" if first.needed_by else ""
        findings.append(_diagnosed(
            judged, diagnosis, facts=facts, matrix=matrix,
            message=f"{name(binary)} needs {first.name}{by}, which the dynamic loader will not "
                    f"find: importing it will fail ('{first.name}: cannot open shared object "
                    f"file') — {diagnosis.explanation}{others}", remedies=remedies,
            missing=[lib.name for lib in missing], searched=[n.name for n in binary.needed]))
    return findings


def check_symbols(facts: Facts, matrix: Matrix) -> Outcome:
    judgement = _judged(facts)
    if isinstance(judgement, Skip):
        return judgement
    torch = torch_view(facts)
    abi = torch.cxx11_abi if torch else None
    findings: List[Finding] = list(judgement.notes)
    for judged in (j for j in judgement.judged if j.binary.error is None):
        binary = judged.binary
        if not binary.missing_symbol_count:
            findings.append(info(f"{name(binary)}: every symbol it and the libraries it loads import is "
                                 "defined"))
            continue
        rest = split_symbols(binary)[1]
        follow_count, rest_count = symbol_counts(binary)
        if binary.first_failure is not None and binary.first_failure.kind != "symbol" and not rest_count:
            cause = first_cause(binary, torch)
            assert cause is not None
            findings.append(_diagnosed(
                judged, cause, facts=facts, matrix=matrix, severity=Severity.WARNING,
                message=f"{name(binary)}: {binary.missing_symbol_count} symbol(s) stay undefined "
                        f"only because loading stops first ({binary.first_failure.message}): "
                        f"consequences of that failure, not a cause of their own",
                missing=[s.name for s in binary.missing_symbols], missing_in=binary.missing_in))
            continue
        shown_from = rest or binary.missing_symbols
        lead = shown_from[0]
        diagnosis = symbol_cause(binary, lead.name, lead.version, torch)
        shown = [s.demangled or s.name for s in shown_from]
        count = rest_count or binary.missing_symbol_count
        follows = (f"; {follow_count} more follow from the missing "
                   f"{', '.join(lib.name for lib in binary.needed if lib.path is None)}"
                   if follow_count and rest_count else "")
        findings.append(_diagnosed(
            judged, diagnosis, facts=facts, matrix=matrix,
            message=f"{name(binary)} needs {count} symbol(s) that no library it loads defines"
                    f"{_where(binary)}{follows} — {diagnosis.explanation}"
                    f"{_built_for(facts, binary)}. Missing: {'; '.join(shown[:SHOWN_SYMBOLS])}"
                    + (f" … ({SHOWN_SYMBOLS} of {count} shown)" if count > SHOWN_SYMBOLS else ""),
            missing=[s.name for s in binary.missing_symbols], missing_in=binary.missing_in,
            torch_cxx11_abi=abi, extension_cxx11_abi=binary.string_abi))
    return _unless_unread([j.binary for j in judgement.judged], findings)


def _where(binary: BinaryAnalysis) -> str:
    """Which objects of the load miss them, when they are not all the binary's own: the loader
    relocates the libraries a binary brings before the binary, and fails on theirs first."""
    counts = binary.missing_in or {}
    brought = [(path, n) for path, n in counts.items() if path != binary.file.path]
    if not brought:
        return ""
    own = counts.get(binary.file.path, 0)
    parts = "; ".join(f"{n} in {path}" for path, n in brought)
    if own:
        return f" ({parts}; {own} in itself: the loader relocates the libraries it brings before it)"
    return f" (all in libraries it brings, which the loader relocates before it: {parts})"


def _unless_unread(found: List[BinaryAnalysis], findings: List[Finding]) -> Outcome:
    """A check of the readable extensions never passes for one that could not be read (not ELF,
    no permission): without a problem found elsewhere, it is skipped, with the reason."""
    unread = [b for b in found if b.error is not None]
    if not unread or any(f.severity != Severity.INFO for f in findings):
        return findings
    why = "; ".join(f"{name(b)} could not be read ({b.error})" for b in unread)
    done = "; ".join(f.message for f in findings)
    return Skip(f"needs every extension read as ELF, and {why}" + (f"; {done}" if done else ""))




def _built_for(facts: Facts, binary: BinaryAnalysis) -> str:
    """What the installed wheel's file name says it was built for, when pip recorded it."""
    fa = installed_family(facts, binary.file.family)
    packages = facts.packages.data
    dist = packages.get(fa.distribution) if packages and fa and fa.distribution else None
    tag = WHEEL_LOCAL.search(dist.direct_url or "") if dist else None
    if tag is None:
        return ""
    cuda, torch, abi = tag.groups()
    return (f" (its wheel's name says it was built for torch {torch}, CUDA {cuda}, "
            f"cxx11abi{abi})")


def check_glibc(facts: Facts, matrix: Matrix) -> Outcome:
    judgement = _judged(facts)
    if isinstance(judgement, Skip):
        return judgement
    findings: List[Finding] = list(judgement.notes)
    for judged in (j for j in judgement.judged if j.binary.error is None):
        binary = judged.binary
        for unmet in binary.unmet_versions:
            have = f"; it provides up to {unmet.available}" if unmet.available else ""
            findings.append(_diagnosed(
                judged, symbol_version(unmet.version), facts=facts, matrix=matrix,
                message=f"{name(binary)} needs {unmet.version} from {unmet.library}{have}: "
                        f"importing it will fail ('version `{unmet.version}' not found')",
                library=unmet.library, available=unmet.available))
        if not binary.unmet_versions:
            findings.append(info(f"{name(binary)}: the system's C and C++ runtimes provide every "
                                 "symbol version it needs"))
    return _unless_unread([j.binary for j in judgement.judged], findings)


def check_kernels(facts: Facts, matrix: Matrix) -> Outcome:
    judgement = _judged(facts)
    if isinstance(judgement, Skip):
        return judgement
    devices = sorted({cc for _, cc in gpus(facts)})
    loaded = [j for j in judgement.judged if j.binary.kernels is not None]
    with_kernels = [j.binary for j in loaded]
    if not devices:
        listed = "; ".join(f"{name(b)}: {_archs(b)}" for b in with_kernels)
        return Skip("needs a GPU with a known compute capability, and none was found"
                    + (f" (kernels: {listed})" if listed else ""))
    findings: List[Finding] = []
    for judged in loaded:
        binary, kernels = judged.binary, judged.binary.kernels
        assert kernels is not None
        archs = _archs(binary)
        for cc in devices:
            if any(runs_on(a, cc) for a in [*kernels.sass, *kernels.ptx]):
                findings.append(info(f"{name(binary)} has kernels for sm_{cc.major}{cc.minor} "
                                     f"({archs})", sass=kernels.sass, ptx=kernels.ptx))
                continue
            maybe = f" — if it is loaded at all: {judged.why}" if judged.load is Load.MAYBE else ""
            findings.append(Finding(
                severity=cap(Severity.ERROR, judged), category=Category.NO_KERNEL_IMAGE,
                subject=name(binary),
                message=f"{name(binary)} has no kernels for sm_{cc.major}{cc.minor} ({archs}): "
                        "launching them fails with 'no kernel image is available for execution "
                        f"on the device'{maybe}",
                evidence={"path": binary.file.path, "sass": kernels.sass, "ptx": kernels.ptx},
                remedies=_kernel_remedies(binary, cc.major, cc.minor, matrix)))
    return findings or Skip("needs a binary with CUDA kernels, and none has a .nv_fatbin section")


def _archs(binary: BinaryAnalysis) -> str:
    kernels = binary.kernels
    assert kernels is not None
    return "SASS " + " ".join(kernels.sass or ["none"]) + (
        f", PTX {' '.join(kernels.ptx)}" if kernels.ptx else ", no PTX")


def _kernel_remedies(binary: BinaryAnalysis, major: int, minor: int,
                     matrix: Matrix) -> List[Remedy]:
    if binary.file.module in CSRC:
        folder, triton = CSRC[binary.file.module]
        use = f" Or use {triton}, the Triton version, which compiles for the GPU at run time." \
            if triton else ""
        # These csrc/ extensions pass no -gencode of their own: torch's cpp_extension builds
        # what TORCH_CUDA_ARCH_LIST names.
        return [Remedy(summary=f"Rebuild {binary.file.module} from flash-attention's {folder} "
                       f"with kernels for this GPU.{use}",
                       commands=[command("cd", f"flash-attention/{folder}", AND,
                                         env("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}"), "pip",
                                         "install", ".", "--no-build-isolation")])]
    from fadoctor.install.wheels import build_arch

    release = max((r for r in matrix.flash_attn_releases if r.arch_env
                   and not r.version.is_prerelease), key=lambda r: r.version, default=None)
    arch = build_arch(release, Version(f"{major}.{minor}")) if release else None
    if release is None or arch is None or release.arch_env is None:
        return [Remedy(summary=f"No flash-attn 2.x build has kernels for sm_{major}{minor}: "
                       "use PyTorch SDPA (attn_implementation=\"sdpa\").")]
    return [Remedy(summary=f"Build it for this GPU: flash-attn {release.version}'s setup.py "
                   f"builds only the archs {release.arch_env} names among "
                   f"{', '.join(sorted((a.removeprefix('sm_') for a in release.build_archs), key=int))} "
                   f"(sm_{arch} kernels run on sm_{major}{minor}); its wheels carry "
                   f"{' '.join(release.archs)}.",
                   commands=[command(env("FLASH_ATTENTION_FORCE_BUILD", "TRUE"),
                                     env(release.arch_env, arch), "pip", "install",
                                     requirement("flash-attn", release.version), "--no-build-isolation",
                                     "--no-cache-dir")])]


def check_agreement(facts: Facts, matrix: Matrix) -> Outcome:
    if facts.mode == "static":
        return Skip("needs the real imports, and check --static imports nothing")
    found = _binaries(facts)
    if isinstance(found, Skip):
        return found
    findings: List[Finding] = []
    for binary in (b for b in found if b.error is None):
        actual = _import_outcome(facts, binary)
        if actual is None:
            continue
        failed, said = actual
        predicted = binary.predicts_import_failure
        verdict = f"static: {'fails' if predicted else 'loads'}; import: {said}"
        if predicted == failed:
            findings.append(info(f"{name(binary)}: the prediction matches the import ({verdict})"))
            continue
        findings.append(Finding(
            severity=Severity.WARNING, category=Category.INTERNAL, subject=name(binary),
            message=f"{name(binary)}: fadoctor's static analysis and the real import disagree "
                    f"({verdict}) — a fadoctor bug; please report it with `fadoctor snapshot`",
            evidence={"path": binary.file.path, "predicted_failure": predicted,
                      "import": said}))
    return findings or Skip("needs an import result for an analysed binary, and none was made")


def _import_outcome(facts: Facts, binary: BinaryAnalysis) -> Optional[Tuple[bool, str]]:
    """Whether importing this binary failed in the worker, when the facts can tell."""
    fa = installed_family(facts, binary.file.family)
    if fa is None or fa.imported is None:
        return None
    if fa.imported.data is not None:
        ext = next((e for e in fa.imported.data.extensions if e.module == binary.file.module),
                   None)
        if ext is None:
            return None
        return (not ext.ok, "loads" if ext.ok else f"fails: {ext.error}")
    failure = fa.imported.failure
    if failure is None or failure.kind != FailureKind.IMPORT_ERROR:
        return None
    loader = ("undefined symbol" in failure.reason or "cannot open shared object" in failure.reason
              or "not found (required by" in failure.reason)
    # The loader names the object for symbols and versions, only the library for a missing one.
    mine = (binary.file.path in failure.reason or (binary.file.module or "\0") in failure.reason
            or any(obj in failure.reason for obj in binary.missing_in or {})
            or any(f"{lib.name}: cannot open" in failure.reason for lib in binary.needed))
    return (True, f"fails: {failure.reason}") if loader and mine else None
