"""Counting the worker processes the runner starts, by wrapping the real `subprocess.Popen`."""

from __future__ import annotations

import subprocess
from typing import Any, List

import pytest

from fadoctor.probes import protocol


def count_worker_starts(monkeypatch: pytest.MonkeyPatch) -> List[List[str]]:
    """From now on, append the command line of each worker process started (they still run)."""
    started: List[List[str]] = []
    real = subprocess.Popen

    def popen(args: Any, *rest: Any, **kwargs: Any) -> Any:
        if str(protocol.WORKER) in [str(a) for a in args]:
            started.append([str(a) for a in args])
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)  # the module runner calls Popen through
    return started


def stages_of(command: List[str]) -> List[str]:
    """The stages a worker command line asks for."""
    return command[command.index("--stages") + 1].split(",")
