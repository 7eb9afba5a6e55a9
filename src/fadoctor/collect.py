"""`collect(options) -> Facts`: all of fadoctor's I/O on the examined environment happens here.

Start-up matters: the worker process is started first, from standard-library code, and the
pydantic models load while the target interpreter imports torch (`Collection`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from fadoctor.errors import UsageError
from fadoctor.probes.kernels import KernelOptions, KernelWorkers
from fadoctor.probes.runner import Background, Progress, StageOutcome
from fadoctor.target import registry

if TYPE_CHECKING:
    from fadoctor.facts import Driver, Facts, Probe


@dataclass(frozen=True)
class CollectOptions:
    python: Optional[str] = None  # --python
    timeouts: Mapping[str, float] = field(default_factory=dict)
    environ: Optional[Mapping[str, str]] = None  # defaults to os.environ
    static: bool = False  # read files only: import neither torch nor flash-attention
    extensions: Tuple[str, ...] = ()  # more binaries to analyse (--extension)
    kernels: KernelOptions = field(default_factory=KernelOptions)  # smoke tests, compile probe


@dataclass(frozen=True)
class TargetChoice:
    python: str
    chosen_by: str  # --python, VIRTUAL_ENV, CONDA_PREFIX, current


def resolve_target(python: Optional[str], environ: Mapping[str, str]) -> TargetChoice:
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
        return TargetChoice(python=str(path), chosen_by="--python")
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = environ.get(var)
        if prefix:
            found = _env_python(Path(prefix))
            if found is not None:
                return TargetChoice(python=str(found), chosen_by=var)
    return TargetChoice(python=sys.executable, chosen_by="current")


def _env_python(prefix: Path) -> Optional[Path]:
    for rel in ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe"):
        candidate = prefix / rel
        if candidate.is_file():
            return candidate
    return None


class Collection:
    """A collection under way: the worker and the driver probe run from the moment it exists."""

    def __init__(self, options: CollectOptions, progress: Optional[Progress] = None) -> None:
        environ = options.environ if options.environ is not None else os.environ
        self.target = resolve_target(options.python, environ)
        self._started = time.monotonic()
        self._options = options
        self._environ = environ
        self._stages = registry.names(static=options.static)
        # One worker per lane, all started now: the lanes run in parallel.
        self._workers = [Background(self.target.python, stages, timeouts=options.timeouts,
                                    env=environ, progress=progress)
                         for stages in registry.lanes(self._stages).values()]
        # The driver belongs to the machine, not the environment: probe it meanwhile, here.
        self._driver: List[Probe[Driver]] = []
        self._kernels: Optional[KernelWorkers] = None
        self._kernels_skipped: Optional[str] = None
        self._progress = progress
        self._driver_thread = threading.Thread(target=self._probe_driver, daemon=True)
        self._driver_thread.start()

    def _probe_driver(self) -> None:
        from fadoctor.assemble import safe_driver
        from fadoctor.probes.kernels import gate

        self._driver.append(safe_driver())
        kernels = self._options.kernels
        if kernels.wanted and not self._options.static:
            self._kernels_skipped = gate(self._driver[0], kernels)
            if self._kernels_skipped is None:  # the kernel workers start as soon as a GPU is known
                self._kernels = KernelWorkers(self.target.python, self._environ, kernels,
                                              progress=self._progress,
                                              timeouts=self._options.timeouts)

    def facts(self) -> Facts:
        from fadoctor.assemble import assemble
        from fadoctor.probes.binaries import analyze_binaries

        outcomes: Dict[str, StageOutcome] = {}
        for worker in self._workers:
            outcomes.update(worker.wait())
        self._driver_thread.join()
        ordered = {stage: outcomes[stage] for stage in self._stages}
        facts = assemble(self.target, ordered, self._driver[0], static=self._options.static)
        # Read the binaries the worker located: here, not in the target, since pyelftools is
        # fadoctor's dependency, not the environment's.
        facts = analyze_binaries(facts, self._options.extensions, self._environ)
        update = self._kernel_facts()
        update["timings"] = {**facts.timings, **update.pop("timings", {}),
                             "total": round(time.monotonic() - self._started, 4)}
        return facts.model_copy(update=update)

    def _kernel_facts(self) -> Dict[str, Any]:
        from fadoctor.probes.kernels import assemble

        kernels = self._options.kernels
        if not kernels.wanted or self._options.static:
            return {}
        outcomes = self._kernels.wait() if self._kernels is not None else {}
        update = assemble(outcomes, kernels, self._kernels_skipped)
        update["timings"] = {stage: o.seconds for stage, o in outcomes.items()}
        return update


def collect(options: CollectOptions, progress: Optional[Progress] = None) -> Facts:
    return Collection(options, progress).facts()


