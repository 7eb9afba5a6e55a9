"""Runs the worker in the target interpreter: the only place that starts child Python processes.

Each stage has a timeout. A stage that crashes the worker (signal), makes it exit, or hangs
becomes a `StageFailure` for that stage, and a fresh worker carries on with the stages after it, so
the happy path costs one child and one `import torch`, and the unhappy path still finishes.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, Mapping, Optional, Sequence

from fadoctor.probes.protocol import Event, command, decode
from fadoctor.target.registry import BY_NAME

TAIL_BYTES = 4000

Progress = Callable[[str], None]


@dataclass(frozen=True)
class StageFailure:
    """Why a stage has no data; the fields of `fadoctor.facts.Failure`, kept as plain data so
    that starting the worker does not wait for the pydantic models to load."""

    kind: str  # a fadoctor.facts.FailureKind value
    reason: str
    exception_type: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[str] = None
    stderr_tail: Optional[str] = None
    traceback_tail: Optional[str] = None


@dataclass(frozen=True)
class StageOutcome:
    stage: str
    ok: bool
    data: Optional[Dict[str, Any]] = None
    failure: Optional[StageFailure] = None
    seconds: float = 0.0


@dataclass
class _Run:
    """What one worker process reported before it ended."""

    outcomes: Dict[str, StageOutcome] = field(default_factory=dict)
    started: Optional[str] = None
    started_at: float = 0.0
    done: bool = False


def run_stages(
    python: str,
    stages: Sequence[str],
    *,
    timeouts: Optional[Mapping[str, float]] = None,
    env: Optional[Mapping[str, str]] = None,
    progress: Optional[Progress] = None,
) -> Dict[str, StageOutcome]:
    """Run `stages` in `python`, restarting past any stage that kills or hangs the worker.

    Each stage may take its registry timeout, or what `timeouts` says for it."""
    unknown = [s for s in stages if s not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown stage {unknown[0]!r}")
    limits = {s: (timeouts or {}).get(s, BY_NAME[s].timeout) for s in stages}
    results: Dict[str, StageOutcome] = {}
    remaining = list(stages)
    while remaining:
        run, failure = _run_once(python, remaining, limits, env, progress)
        results.update(run.outcomes)
        if run.started is not None and run.started not in run.outcomes:
            assert failure is not None
            results[run.started] = StageOutcome(
                run.started, False, failure=failure, seconds=time.monotonic() - run.started_at
            )
        done_now = [s for s in remaining if s in results]
        if not done_now:
            # The interpreter failed before any stage started: every stage fails the same way.
            failure = failure or StageFailure(kind="exit", reason="the worker reported nothing")
            for stage in remaining:
                results[stage] = StageOutcome(stage, False, failure=failure)
            break
        remaining = [s for s in remaining if s not in results]
    return results


class Background:
    """`run_stages` on a thread: the worker starts now, the caller collects the outcome later."""

    def __init__(self, python: str, stages: Sequence[str], **kwargs: Any) -> None:
        self._outcomes: Dict[str, StageOutcome] = {}
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, args=(python, stages), kwargs=kwargs,
                                        daemon=True)
        self._thread.start()

    def _run(self, python: str, stages: Sequence[str], **kwargs: Any) -> None:
        try:
            self._outcomes = run_stages(python, stages, **kwargs)
        except BaseException as exc:  # handed to the caller of wait()
            self._error = exc

    def wait(self) -> Dict[str, StageOutcome]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._outcomes


def _run_once(
    python: str,
    stages: Sequence[str],
    limits: Mapping[str, float],
    env: Optional[Mapping[str, str]],
    progress: Optional[Progress],
) -> tuple[_Run, Optional[StageFailure]]:
    run = _Run()
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            command(python, stages, write_fd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(write_fd,),
            env=dict(env) if env is not None else None,
            start_new_session=True,  # so a hang can be killed with everything it started
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        return run, StageFailure(kind="not_found", reason=f"cannot run {python}: {exc}")
    os.close(write_fd)
    output: Deque[bytes] = deque()
    drain = threading.Thread(target=_drain, args=(proc, output), daemon=True)
    drain.start()
    run.started_at = time.monotonic()
    first = stages[0]
    deadline = run.started_at + limits[first]
    timed_out = False
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        timed_out = _read_events(pipe, run, limits, deadline, progress)
    if timed_out:
        _kill(proc)
    proc.wait()
    drain.join(timeout=5)
    if run.done:
        return run, None
    # Before its first event the worker runs on the first stage's clock: report that limit.
    limit = limits.get(run.started or first, limits[first])
    return run, _failure(proc.returncode, timed_out, run, limit, _tail(output))


def _read_events(
    pipe: Any,
    run: _Run,
    limits: Mapping[str, float],
    deadline: float,
    progress: Optional[Progress],
) -> bool:
    """Read events until the worker is done or gone; True if the running stage timed out."""
    buffer = b""
    with selectors.DefaultSelector() as sel:
        sel.register(pipe, selectors.EVENT_READ)
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return True
            if not sel.select(timeout=wait):
                continue
            chunk = pipe.read(65536)
            if not chunk:
                return False
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                event = decode(line)
                deadline = _apply(event, run, limits, deadline, progress)
                if run.done:
                    return False


def _apply(
    event: Event,
    run: _Run,
    limits: Mapping[str, float],
    deadline: float,
    progress: Optional[Progress],
) -> float:
    now = time.monotonic()
    if event.kind == "start" and event.stage is not None:
        stage = event.stage
        if run.started is not None:  # the first stage's clock started with the process
            run.started_at = now
            deadline = now + limits.get(stage, deadline - now)
        run.started = stage
        if progress is not None:
            progress(stage)
    elif event.kind == "result" and event.stage is not None:
        failure = StageFailure(**(event.failure or {})) if not event.ok else None
        run.outcomes[event.stage] = StageOutcome(
            event.stage, event.ok, data=event.data, failure=failure,
            seconds=round(now - run.started_at, 4),
        )
    elif event.kind == "done":
        run.done = True
    return deadline


def _drain(proc: subprocess.Popen[bytes], output: Deque[bytes]) -> None:
    assert proc.stdout is not None
    size = 0
    for chunk in iter(lambda: proc.stdout.read1(8192), b""):  # type: ignore[union-attr,attr-defined]
        output.append(chunk)
        size += len(chunk)
        while size - len(output[0]) > TAIL_BYTES and len(output) > 1:
            size -= len(output.popleft())


def _tail(output: Deque[bytes]) -> Optional[str]:
    text = b"".join(output)[-TAIL_BYTES:].decode("utf-8", "replace").strip()
    return text or None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _failure(
    returncode: int, timed_out: bool, run: _Run, limit: float, tail: Optional[str]
) -> StageFailure:
    stage = run.started or "start-up"
    if timed_out:
        return StageFailure(
            kind="timeout",
            reason=f"stage {stage} did not finish within {limit:g} s; the worker was killed",
            stderr_tail=tail,
        )
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return StageFailure(
            kind="crash",
            reason=f"the worker died from {name} during stage {stage}",
            signal=name,
            exit_code=returncode,
            stderr_tail=tail,
        )
    return StageFailure(
        kind="exit",
        reason=f"the worker exited with status {returncode} during stage {stage}",
        exit_code=returncode,
        stderr_tail=tail,
    )
