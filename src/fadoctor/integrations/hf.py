"""The transformers hook: a TrainerCallback that runs fadoctor's preflight on rank 0 when training
begins, logs the report, and stops the run on problems. Imports transformers (it subclasses its
TrainerCallback): import it only where transformers is installed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional

from transformers import TrainerCallback

from fadoctor.integrations.ranks import LOG, preflight_on_rank0

if TYPE_CHECKING:
    from fadoctor.api import FailOn


class FadoctorCallback(TrainerCallback):  # type: ignore[misc]  # transformers is untyped here
    """`Trainer(..., callbacks=[FadoctorCallback()])`: `preflight_on_rank0(fail_on, **options)` at
    on_train_begin. On problems it raises `fadoctor.PreflightError` before the first step (with
    `stop=True`, it sets `control.should_training_stop` instead: the Trainer then ends after its
    first step, without an exception). The report is kept as `.report`."""

    def __init__(self, fail_on: FailOn = "error", *, stop: bool = False,
                 log: Optional[logging.Logger] = None, **options: Any) -> None:
        self.fail_on = fail_on
        self.stop = stop
        self.log = log or LOG
        self.options = options
        self.report: Any = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        from fadoctor.api import PreflightError

        if not getattr(state, "is_world_process_zero", True):
            return control
        try:
            self.report = preflight_on_rank0(self.fail_on, log=self.log, **self.options)
        except PreflightError as exc:
            self.report = exc.report
            if not self.stop:
                raise
            self.log.error("fadoctor: stopping the run: %s", exc.problems[0].message)
            control.should_training_stop = True
        return control
