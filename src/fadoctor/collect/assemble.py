"""Turn the worker's raw stage outcomes and the driver probe into the `Facts` model (pure)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from pydantic import ValidationError

from fadoctor import __version__
from fadoctor.facts import model as models
from fadoctor.facts.model import (
    Driver,
    Facts,
    Failure,
    FailureKind,
    Family,
    FamilyImport,
    Files,
    FlashAttention,
    Packages,
    Probe,
    Target,
    Torch,
    probe_of,
)
from fadoctor.in_target.registry import BY_NAME
from fadoctor.in_target.tables import FAMILIES
from fadoctor.probes.runner import StageOutcome

if TYPE_CHECKING:
    from fadoctor.collect.target import TargetChoice


def safe_driver() -> Probe[Driver]:
    from fadoctor.probes.driver import probe_driver

    try:
        return probe_driver()
    except Exception as exc:  # a probe bug must not sink the report
        return Probe.failed(Failure(kind=FailureKind.ERROR, reason=f"{type(exc).__name__}: {exc}"))


def assemble(target: TargetChoice, outcomes: Mapping[str, StageOutcome], driver: Probe[Driver],
             static: bool = False) -> Facts:
    """The facts from the worker's stages; `static`: only the stages that import nothing ran."""
    timings = {stage: o.seconds for stage, o in outcomes.items()}
    packages: Probe[Packages] = _stage(outcomes["packages"])
    files: Probe[Files] = _stage(outcomes["files"])
    if static:
        torch: Probe[Torch] = Probe.failed(Failure(kind=FailureKind.SKIPPED,
                                                   reason="not imported (check --static)"))
        families = [_static_family(f, packages, files) for f in Family]
    else:
        torch = _torch(outcomes["torch"], outcomes["sdpa"])
        families = [_family(f, outcomes[f.value], packages) for f in Family]
    hf = None if static else outcomes.get("transformers")
    return Facts(
        fadoctor_version=__version__,
        origin="static" if static else "probe",
        mode="static" if static else "full",
        target=Target(python=target.python, chosen_by=target.chosen_by),
        host=_stage(outcomes["host"]),
        packages=packages,
        driver=driver,
        torch=torch,
        flash_attention=families,
        files=files,
        transformers=_stage(hf) if hf is not None else None,
        timings=timings,
    )


def _static_family(family: Family, packages: Probe[Packages], files: Probe[Files]
                   ) -> FlashAttention:
    """Installed if its distribution is there or a compiled extension of it lies on the path."""
    dist = _family_distribution(family, packages)
    located = files.data is not None and any(e.family == family for e in files.data.extensions)
    if dist is None and not located:
        return FlashAttention(family=family, installed=False)
    return FlashAttention(family=family, installed=True, distribution=dist[0] if dist else None,
                          version=dist[1] if dist else None)


def _failure(outcome: StageOutcome) -> Failure:
    assert outcome.failure is not None
    return Failure.model_validate(asdict(outcome.failure))


def _stage(outcome: StageOutcome) -> Probe[Any]:
    """A stage's outcome as a probe of the facts model the registry says it fills."""
    return probe_of(getattr(models, BY_NAME[outcome.stage].facts), outcome)


def _torch(torch: StageOutcome, sdpa: StageOutcome) -> Probe[Torch]:
    if not torch.ok:
        return probe_of(Torch, torch)
    data: Dict[str, Any] = dict(torch.data or {})
    if sdpa.ok and sdpa.data is not None:
        data["sdpa"] = sdpa.data.get("sdpa")
    elif sdpa.failure is not None:
        data["sdpa_error"] = f"{sdpa.failure.kind}: {sdpa.failure.reason}"
    return probe_of(Torch, StageOutcome("torch", True, data=data))


def _family(family: Family, outcome: StageOutcome, packages: Probe[Packages]) -> FlashAttention:
    dist = _family_distribution(family, packages)
    if not outcome.ok:
        # The stage killed or hung the worker: something was there to import.
        return FlashAttention(family=family, installed=True,
                              imported=Probe.failed(_blamed(_failure(outcome))),
                              distribution=dist[0] if dist else None,
                              version=dist[1] if dist else None)
    data = outcome.data or {}
    if not data.get("installed"):
        return FlashAttention(family=family, installed=False)
    return FlashAttention(family=family, installed=True, imported=_imported(data.get("import")),
                          distribution=_text(data.get("distribution")),
                          version=_text(data.get("version")))


def _blamed(failure: Failure) -> Failure:
    """A family stage that died or hung while torch imported: torch's failure, not the family's
    (the family was never imported)."""
    if failure.importing != "torch":
        return failure
    return failure.model_copy(update={"kind": FailureKind.SKIPPED,
                                      "reason": f"needs torch, whose import failed: {failure.reason}"})


def _imported(raw: Any) -> Probe[FamilyImport]:
    """The import record of a family stage: its data or its failure, or why it is unreadable."""
    try:
        if raw.get("ok"):
            return Probe.success(FamilyImport.model_validate(raw["data"]))
        return Probe.failed(Failure.model_validate(raw.get("failure") or {
            "kind": "error", "reason": "the worker did not report the import"}))
    except (ValidationError, KeyError, TypeError, AttributeError) as exc:
        return Probe.failed(Failure(kind=FailureKind.ERROR,
                                    reason=f"the worker's import record is malformed: {exc}"))


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _family_distribution(family: Family, packages: Probe[Packages]) -> Optional[tuple[str, str]]:
    if packages.data is None:
        return None
    for name in FAMILIES[family.value]["distributions"]:
        dist = packages.data.get(name)
        if dist is not None:
            return dist.name, dist.version
    return None
