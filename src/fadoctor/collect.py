"""`collect(options) -> Facts`: all of fadoctor's I/O on the examined environment happens here."""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from pydantic import ValidationError

from fadoctor import __version__
from fadoctor.errors import UsageError
from fadoctor.facts import (
    Driver,
    Facts,
    Failure,
    FailureKind,
    Family,
    FamilyImport,
    FlashAttention,
    Host,
    Packages,
    Probe,
    Target,
    Torch,
)
from fadoctor.probes import worker
from fadoctor.probes.driver import probe_driver
from fadoctor.probes.runner import Progress, StageOutcome, run_stages


@dataclass(frozen=True)
class CollectOptions:
    python: Optional[str] = None  # --python
    timeouts: Mapping[str, float] = field(default_factory=dict)
    environ: Optional[Mapping[str, str]] = None  # defaults to os.environ


def resolve_target(python: Optional[str], environ: Mapping[str, str]) -> Target:
    """The interpreter to examine: --python, else the active venv, else conda, else our own."""
    if python:
        path = Path(python).expanduser()
        if path.is_dir():
            found = _env_python(path)
            if found is None:
                raise UsageError(f"--python {python}: no Python interpreter in that folder")
            path = found
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise UsageError(f"--python {python}: not an executable file")
        return Target(python=str(path), chosen_by="--python")
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = environ.get(var)
        if prefix:
            found = _env_python(Path(prefix))
            if found is not None:
                return Target(python=str(found), chosen_by=var)  # type: ignore[arg-type,unused-ignore]
    return Target(python=sys.executable, chosen_by="current")


def _env_python(prefix: Path) -> Optional[Path]:
    for rel in ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe"):
        candidate = prefix / rel
        if candidate.is_file():
            return candidate
    return None


def collect(options: CollectOptions, progress: Optional[Progress] = None) -> Facts:
    environ = options.environ if options.environ is not None else os.environ
    target = resolve_target(options.python, environ)
    started = time.monotonic()
    # The driver belongs to the machine; probe it while the worker imports torch.
    driver_box: List[Probe[Driver]] = []
    driver_thread = threading.Thread(target=lambda: driver_box.append(_safe_driver()), daemon=True)
    driver_thread.start()
    outcomes = run_stages(target.python, worker.STAGES, timeouts=options.timeouts,
                          env=environ, progress=progress)
    driver_thread.join()
    timings = {stage: o.seconds for stage, o in outcomes.items()}
    timings["total"] = round(time.monotonic() - started, 4)
    packages = _probe(Packages, outcomes["packages"])
    return Facts(
        fadoctor_version=__version__,
        target=target,
        host=_probe(Host, outcomes["host"]),
        packages=packages,
        driver=driver_box[0],
        torch=_torch(outcomes["torch"], outcomes["sdpa"]),
        flash_attention=[_family(f, outcomes[f.value], packages) for f in Family],
        timings=timings,
    )


def _safe_driver() -> Probe[Driver]:
    try:
        return probe_driver()
    except Exception as exc:  # a probe bug must not sink the report
        return Probe.failed(Failure(kind=FailureKind.ERROR, reason=f"{type(exc).__name__}: {exc}"))


def _probe(model: Any, outcome: StageOutcome) -> Probe[Any]:
    if not outcome.ok:
        assert outcome.failure is not None
        return Probe.failed(outcome.failure)
    try:
        return Probe.success(model.model_validate(outcome.data))
    except ValidationError as exc:
        return Probe.failed(Failure(kind=FailureKind.ERROR,
                                    reason=f"the worker's {outcome.stage} record is malformed: {exc}"))


def _torch(torch: StageOutcome, sdpa: StageOutcome) -> Probe[Torch]:
    if not torch.ok:
        return _probe(Torch, torch)
    data: Dict[str, Any] = dict(torch.data or {})
    if sdpa.ok and sdpa.data is not None:
        data["sdpa"] = sdpa.data["sdpa"]
    elif sdpa.failure is not None:
        data["sdpa_error"] = f"{sdpa.failure.kind.value}: {sdpa.failure.reason}"
    return _probe(Torch, StageOutcome("torch", True, data=data))


def _family(family: Family, outcome: StageOutcome, packages: Probe[Packages]) -> FlashAttention:
    dist = _family_distribution(family, packages)
    if not outcome.ok:
        # The stage killed or hung the worker: something was there to import.
        assert outcome.failure is not None
        return FlashAttention(family=family, installed=True, imported=Probe.failed(outcome.failure),
                              distribution=dist[0] if dist else None,
                              version=dist[1] if dist else None)
    data = outcome.data or {}
    if not data.get("installed"):
        return FlashAttention(family=family, installed=False)
    raw = data.get("import") or {}
    imported: Probe[FamilyImport]
    if raw.get("ok"):
        imported = Probe.success(FamilyImport.model_validate(raw["data"]))
    else:
        imported = Probe.failed(Failure.model_validate(raw.get("failure") or {
            "kind": "error", "reason": "the worker did not report the import"}))
    return FlashAttention(family=family, installed=True, imported=imported,
                          distribution=data.get("distribution"), version=data.get("version"))


def _family_distribution(family: Family, packages: Probe[Packages]) -> Optional[tuple[str, str]]:
    if packages.data is None:
        return None
    for name in worker.FAMILIES[family.value]["distributions"]:
        dist = packages.data.get(name)
        if dist is not None:
            return dist.name, dist.version
    return None
