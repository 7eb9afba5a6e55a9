"""A family that does not import because a module it imports is missing: which requirement its
distribution declares (Requires-Dist) is unmet, judged as `pip check` does, and the command that
installs it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple

from packaging.markers import UndefinedComparison, UndefinedEnvironmentName, default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from fadoctor.checks.base import torch_view, version
from fadoctor.checks.classify import Diagnosis
from fadoctor.checks.remedies import remedy, sdpa_fallback, torch_variant_remedies
from fadoctor.facts.model import Distribution, Facts, FlashAttention
from fadoctor.in_target.tables import FAMILIES
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement

_PLATFORMS = {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}


@dataclass(frozen=True)
class Unmet:
    requirement: Requirement  # markers dropped; same-name requirements merged
    installed: Optional[str]  # the version installed (None: not installed)


def missing_dependency(fa: FlashAttention, diagnosis: Diagnosis, facts: Facts,
                       matrix: Matrix) -> Optional[Tuple[Diagnosis, List[Remedy]]]:
    """The cause and remedies of "No module named X", X not the family's own module, from its
    distribution's declared requirements; None when they are unknown (older facts)."""
    module = diagnosis.details.get("module")
    packages = facts.packages.data
    dist = packages.get(fa.distribution) if packages and fa.distribution else None
    if module is None or dist is None or dist.requires is None or _own(module, fa, dist):
        return None
    assert packages is not None
    extras = _extras(fa, facts, matrix)
    unmet = unmet_requirements(dist.requires, packages.distributions, marker_environment(facts), extras)
    who = f"{dist.name} {dist.version}"
    if module.split(".")[0] == "triton" and not any(
            canonicalize_name(u.requirement.name) == "triton" for u in unmet):
        return _no_triton(who, diagnosis, facts, matrix, packages.get("torch"))
    if not unmet:
        provider = _provider(module, packages.distributions)
        return Diagnosis(Category.VERSION_CONFLICT, f"a module it imports, {module}, is missing, "
                         f"though every requirement {who} declares is installed"
                         + (f"; {provider.name} {provider.version} should provide it" if provider
                            else ""), diagnosis.details), \
            [_reinstall(provider or dist, provider is None, packages.get("torch")),
             sdpa_fallback("Meanwhile:")]
    unmet.sort(key=lambda u: canonicalize_name(u.requirement.name) != canonicalize_name(module))
    said = "; ".join(_describe(u) for u in unmet)
    # not_installed when a required distribution is absent (the usual case: installed with
    # --no-deps, or pip's resolver skipped it); version_conflict when all are present but one's
    # version falls outside what the family declares.
    category = (Category.NOT_INSTALLED if any(u.installed is None for u in unmet)
                else Category.VERSION_CONFLICT)
    return Diagnosis(category, f"a module it imports, {module}, is missing: {who} requires "
                     f"{said}", {**diagnosis.details, "unmet": said}), \
        [*_install(fa, dist, unmet, extras), *_then_cuda_torch(who, facts, matrix),
         sdpa_fallback("Meanwhile:")]


def _then_cuda_torch(who: str, facts: Facts, matrix: Matrix) -> List[Remedy]:
    """On a CPU-only torch the family fails again once its requirements are in (triton, its
    kernels): the CUDA torch it also needs, said with the first remedy rather than found next."""
    view = torch_view(facts)
    if view is None or view.cuda or view.hip:
        return []
    return torch_variant_remedies(matrix, facts, f"Then {who} also needs a CUDA build of torch: "
                                  f"torch {view.version} is CPU-only.")


def declared_library(library: str, distribution: Optional[str], cause: Diagnosis,
                     facts: Facts) -> Optional[Tuple[Diagnosis, List[Remedy]]]:
    """A library no installed file provides, of a binary whose distribution declares requirements
    (Requires-Dist) that are not installed: not a wrong wheel, a dependency left out (--no-deps,
    or a resolver that skipped it), and the command that installs what it declares. None when the
    distribution, its requirements or the installed set are unknown, or every one is installed."""
    packages = facts.packages.data
    dist = packages.get(str(canonicalize_name(distribution))) if packages and distribution else None
    if dist is None or dist.requires is None:
        return None
    assert packages is not None
    absent = [u for u in unmet_requirements(dist.requires, packages.distributions, marker_environment(facts),
                                            set()) if u.installed is None]
    if not absent:
        return None
    said = ", ".join(str(u.requirement) for u in absent)
    diagnosis = Diagnosis(Category.NOT_INSTALLED,
                          f"{dist.name} {dist.version} declares requirements that are not installed "
                          f"({said}), and {library} is most likely one of their libraries: the wheel "
                          "is not at fault, its dependencies were left out",
                          {**cause.details, "declared": said})
    return diagnosis, [Remedy(summary=f"Install what {dist.name} {dist.version} requires and is "
                              "missing here (pip leaves the installed torch alone when it fits).",
                              commands=[command("pip", "install",
                                                *(spec_of(u.requirement) for u in absent))])]


def _no_triton(who: str, diagnosis: Diagnosis, facts: Facts, matrix: Matrix,
               torch: Optional[Distribution]) -> Tuple[Diagnosis, List[Remedy]]:
    """triton is torch's requirement, not the family's: torch's CUDA builds require it (their
    Requires-Dist), a CPU-only build ships none. Whatever else is unmet, this is why it failed."""
    view = torch_view(facts)
    if view is not None and not view.cuda and not view.hip:
        return Diagnosis(Category.TORCH_CPU_ONLY, f"a module it imports, triton, is missing: "
                         f"triton comes with torch's CUDA builds, and torch {view.version} is a "
                         "CPU-only build, which ships none", diagnosis.details), [
            *torch_variant_remedies(matrix, facts, f"{who} needs a CUDA build of torch."),
            sdpa_fallback("Meanwhile:")]
    wanted = [u for u in unmet_requirements(torch.requires or [], [], marker_environment(facts),
                                            set()) if u.requirement.name == "triton"] \
        if torch is not None else []
    spec = spec_of(wanted[0].requirement) if wanted else "triton"
    return Diagnosis(Category.NOT_INSTALLED, f"a module it imports, triton, is missing: torch "
                     f"requires {spec} and it is not installed", diagnosis.details), [
        remedy("Install the triton torch requires (--no-deps: torch stays).",
               lambda: [command("pip", "install", "--no-deps", spec)]),
        sdpa_fallback("Meanwhile:")]


def unmet_requirements(requires: List[str], installed: List[Distribution],
                       environment: Dict[str, str], extras: Set[str]) -> List[Unmet]:
    """The requirements that apply here (markers, with `extras` taken) and that no installed
    distribution satisfies: absent, or of a version outside the specifier."""
    merged: Dict[str, Requirement] = {}
    for line in requires:
        req = _applying(line, environment, extras)
        if req is None:
            continue
        key = str(canonicalize_name(req.name))
        if key in merged:
            req.extras |= merged[key].extras
            req.specifier &= merged[key].specifier
        merged[key] = req
    versions = {d.name: d.version for d in installed}
    out = []
    for key, req in merged.items():
        have = versions.get(key)
        if have is None or not _satisfies(req, have):
            out.append(Unmet(req, have))
    return out


def _applying(line: str, environment: Dict[str, str], extras: Set[str]) -> Optional[Requirement]:
    try:
        req = Requirement(line)
    except InvalidRequirement:
        return None
    if req.marker is not None:
        try:
            if not any(req.marker.evaluate({**environment, "extra": e}) for e in extras | {""}):
                return None
        except (UndefinedComparison, UndefinedEnvironmentName):
            return None
    req.marker = None
    return req


def _satisfies(req: Requirement, have: str) -> bool:
    try:
        return req.specifier.contains(Version(have), prereleases=True)
    except InvalidVersion:
        return True  # pip check cannot judge it either; not reported


def marker_environment(facts: Facts) -> Dict[str, str]:
    """PEP 508 marker values for the target, from its facts (this interpreter's where unknown)."""
    env = {k: str(v) for k, v in default_environment().items()}
    host = facts.host.data
    if host is None:
        return env
    py = version(host.python_version)
    if py is not None:
        env.update(python_version=f"{py.major}.{py.minor}", python_full_version=str(py))
    if host.os in _PLATFORMS:
        env.update(sys_platform=_PLATFORMS[host.os], platform_system=host.os)
    if host.machine:
        env["platform_machine"] = host.machine
    if host.python_implementation:
        env.update(platform_python_implementation=host.python_implementation,
                   implementation_name=host.python_implementation.lower())
    return env


def _extras(fa: FlashAttention, facts: Facts, matrix: Matrix) -> Set[str]:
    """The extras the family wants on this torch's CUDA major (FA4's [cu13]); which extras the
    user took is not recorded, so the documented one is assumed."""
    torch = facts.torch.data
    cuda = version(torch.cuda if torch else None)
    if cuda is None:
        return set()
    return {r.extra for r in matrix.requirements(fa.family)
            if r.extra is not None and r.cuda_major == cuda.major}


def _own(module: str, fa: FlashAttention, dist: Distribution) -> bool:
    top = module.split(".")[0]
    own = {m.split(".")[0] for m in FAMILIES[fa.family.value]["modules"]}
    return top in own or top in (dist.top_level or [])


def _provider(module: str, installed: List[Distribution]) -> Optional[Distribution]:
    top = module.split(".")[0]
    return next((d for d in installed if top in (d.top_level or [])), None)


def _describe(unmet: Unmet) -> str:
    req = str(unmet.requirement)
    if unmet.installed is None:
        return f"{req}, which is not installed"
    return f"{req}, but {unmet.installed} is installed"


def _install(fa: FlashAttention, dist: Distribution, unmet: List[Unmet],
             extras: Set[str]) -> List[Remedy]:
    # Requirement parsing validated every name, extra and specifier (PEP 508 / PEP 440); each is
    # one word of the command.
    direct = Remedy(summary=f"Install what {dist.name} requires and is missing here.",
                    commands=[command("pip", "install", *(spec_of(u.requirement) for u in unmet))])
    if not extras:
        return [direct]
    taken = ",".join(sorted(extras))
    return [remedy(f"Install {dist.name} again with its [{taken}] extra, which this torch's CUDA "
                   "needs: pip brings the missing requirements with it.",
                   lambda: [command("pip", "install", _pinned(dist, sorted(extras)))]),
            direct]


def spec_of(req: Requirement) -> str:
    """name[extras]specifier, without a URL or marker (both are the target's text)."""
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{canonicalize_name(req.name)}{extras}{req.specifier}"


def _pinned(dist: Distribution, extras: Sequence[str] = ()) -> str:
    """name[extras]==version of the installed distribution, every part validated."""
    return requirement(canonicalize_name(dist.name), dist.version, extras)


def _reinstall(dist: Distribution, deps: bool, torch: Optional[Distribution]) -> Remedy:
    if deps:
        # --force-reinstall with its requirements would reinstall torch too (to the newest
        # release, when the requirement is bare): its own files again, then what it lacks, with
        # the installed torch pinned so that nothing installed moves.
        keep = [_pinned(torch)] if torch is not None and torch.name != dist.name else []
        return remedy(f"Reinstall {dist.name}, then what it requires and lacks (torch stays).",
                      lambda: [command("pip", "install", "--force-reinstall", "--no-deps",
                                       "--no-cache-dir", _pinned(dist)),
                               command("pip", "install", _pinned(dist), *keep)])
    return remedy(f"{dist.name} is installed but its module does not import: reinstall it.",
                  lambda: [command("pip", "install", "--force-reinstall", "--no-deps",
                                   _pinned(dist))])
