"""`collect(options) -> Facts`: all of fadoctor's I/O on the examined environment happens here.

Start-up matters: the worker process is started first, from standard-library code, and the
pydantic models load while the target interpreter imports torch (`Collection`).
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from fadoctor.collect.target import CollectOptions, resolve_target
from fadoctor.in_target import registry
from fadoctor.probes.kernels import KernelWorkers
from fadoctor.probes.runner import Background, Progress, StageOutcome

if TYPE_CHECKING:
    from fadoctor.facts.model import Driver, Facts, Probe


class Collection:
    """A collection under way: the worker and the driver probe run from the moment it exists."""

    def __init__(self, options: CollectOptions, progress: Optional[Progress] = None,
                 driver: bool = True) -> None:
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
        if driver:  # (else at `start_driver`: cli.early starts a collection before pydantic loads)
            self.start_driver()

    def start_driver(self) -> None:
        """Start the driver probe, unless it has started."""
        if self._driver_thread.ident is None:
            self._driver_thread.start()

    def _probe_driver(self) -> None:
        from fadoctor.collect.assemble import safe_driver
        from fadoctor.probes.kernels import gate

        self._driver.append(safe_driver())
        kernels = self._options.kernels
        if kernels.wanted and not self._options.static:
            self._kernels_skipped = gate(self._driver[0], kernels)
            if self._kernels_skipped is None:  # the kernel workers start as soon as a GPU is known
                self._kernels = KernelWorkers(self.target.python, self._environ, kernels,
                                              progress=self._progress,
                                              timeouts=self._options.timeouts,
                                              driver=self._driver[0].data)

    def facts(self) -> Facts:
        from fadoctor.collect.assemble import assemble
        from fadoctor.probes.binaries import analyze_binaries

        outcomes: Dict[str, StageOutcome] = {}
        for worker in self._workers:
            outcomes.update(worker.wait())
        self.start_driver()
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


