"""Runs the worker in the target interpreter: the only place that starts child Python processes.

The first worker must answer the handshake (its Python version, under a short timeout): an
interpreter that does not — not Python >= 3.8, /bin/false, a sleeper — is a TargetError (exit 2),
not an environment whose every stage failed. Each stage has a timeout. A stage that crashes the
worker (signal), makes it exit, or hangs becomes a `StageFailure` for that stage, saying which
import was under way, and a fresh worker carries on with the stages after it, so the happy path
costs one child and one `import torch`, and the unhappy path still finishes. What ended a worker
is read from its exit status, and whatever it started is killed with it (`reaper`).
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
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Tuple

from fadoctor.errors import TargetError
from fadoctor.in_target.registry import BY_NAME
from fadoctor.probes import reaper
from fadoctor.probes.protocol import MINIMUM_PYTHON, Event, command, decode, new_token

TAIL_BYTES = 4000
HANDSHAKE = 20.0  # seconds an interpreter has to start and answer (less if the stage has less)
POLL = 0.05  # how often the worker's exit status is looked at while its pipe is quiet

Progress = Callable[[str], None]


@dataclass(frozen=True)
class StageFailure:
    """Why a stage has no data; the fields of `fadoctor.facts.model.Failure`, kept as plain data so
    that starting the worker does not wait for the pydantic models to load."""

    kind: str  # a fadoctor.facts.model.FailureKind value
    reason: str
    exception_type: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[str] = None
    stderr_tail: Optional[str] = None
    traceback_tail: Optional[str] = None
    importing: Optional[str] = None  # the module being imported when the worker died or hung


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

    token: str
    first: str
    outcomes: Dict[str, StageOutcome] = field(default_factory=dict)
    started: Optional[str] = None
    started_at: float = 0.0
    done: bool = False
    hello: Optional[Event] = None  # its answer to the handshake
    importing: Optional[str] = None  # the module it said it was importing
    refused: Optional[str] = None  # why it could not be started
    output: Deque[bytes] = field(default_factory=deque)  # its stdout and stderr, the tail
    noise: List[bytes] = field(default_factory=list)  # lines on its channel that are not records


def run_stages(
    python: str,
    stages: Sequence[str],
    *,
    timeouts: Optional[Mapping[str, float]] = None,
    env: Optional[Mapping[str, str]] = None,
    progress: Optional[Progress] = None,
    options: Optional[Mapping[str, str]] = None,
) -> Dict[str, StageOutcome]:
    """Run `stages` in `python`, restarting past any stage that kills or hangs the worker.

    Each stage may take its registry timeout, or what `timeouts` says for it; `options` are the
    run-wide settings every stage can read (the worker's context.options)."""
    unknown = [s for s in stages if s not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown stage {unknown[0]!r}")
    limits = {s: (timeouts or {}).get(s, BY_NAME[s].timeout) for s in stages}
    results: Dict[str, StageOutcome] = {}
    remaining = list(stages)
    while remaining:
        run, failure = _run_once(python, remaining, limits, env, progress, options)
        if remaining == list(stages):
            _handshake(python, run, failure)  # the first worker: is this a Python it can examine?
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


def _handshake(python: str, run: _Run, failure: Optional[StageFailure]) -> None:
    """Raise TargetError (exit 2) unless the interpreter answered as Python >= 3.8: an
    interpreter that cannot run the worker is not an environment whose packages all failed."""
    version = run.hello.python if run.hello is not None else None
    if version is not None and version >= MINIMUM_PYTHON:
        return
    if version is not None:
        why = (f"it is Python {'.'.join(map(str, version))}; fadoctor examines Python >= "
               f"{'.'.join(map(str, MINIMUM_PYTHON))}")
    elif run.refused is not None:
        why = run.refused
    else:
        assert failure is not None
        what = {"timeout": "did not answer fadoctor's handshake in time",
                "crash": f"died from {failure.signal} before answering fadoctor's handshake"}
        why = "it " + what.get(failure.kind, f"exited with status {failure.exit_code} before "
                                              "answering fadoctor's handshake")
        last = (failure.stderr_tail or "").strip().splitlines()[-1:]
        why += f" (its last words: {last[0][:200]})" if last else ""
    raise TargetError(f"{python} cannot be examined: {why}")


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
    options: Optional[Mapping[str, str]] = None,
) -> tuple[_Run, Optional[StageFailure]]:
    run = _Run(token=new_token(), first=stages[0])
    read_fd, write_fd = os.pipe()
    try:
        proc = reaper.spawn(command(python, stages, write_fd, options), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            pass_fds=(write_fd,), env=dict(env) if env is not None else None)
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        run.refused = f"cannot run it: {exc.strerror or exc}"
        return run, StageFailure(kind="not_found", reason=f"cannot run {python}: {exc}")
    os.close(write_fd)
    _give_token(proc, run.token)
    drain = threading.Thread(target=_drain, args=(proc, run.output), daemon=True)
    drain.start()
    run.started_at = time.monotonic()
    first = stages[0]
    timed_out = _read_events(read_fd, proc, run, limits, progress)
    # Whatever is left of its tree dies here; a worker that said `done` is leaving by itself.
    status = reaper.release(proc, grace=10.0 if run.done else 0.0)
    drain.join(timeout=5)
    if run.done:
        return run, None
    # Before its first event the worker runs on the first stage's clock: report that limit.
    limit = limits.get(run.started or first, limits[first])
    if run.hello is None:
        limit = min(limit, HANDSHAKE)
    return run, _failure(status, timed_out, run, limit, _tail(run.output, run.noise))


def _give_token(proc: subprocess.Popen[bytes], token: str) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(token.encode("ascii") + b"\n")
        proc.stdin.close()
    except OSError:  # it is gone already (not an interpreter, or one that died at once)
        pass


def _read_events(fd: int, proc: subprocess.Popen[bytes], run: _Run,
                 limits: Mapping[str, float], progress: Optional[Progress]) -> bool:
    """Read records until the worker is done or has exited — its exit status says so, not the end
    of the pipe, which a forked grandchild may hold open; True if it timed out."""
    os.set_blocking(fd, False)
    buffer = b""
    deadline = run.started_at + min(HANDSHAKE, limits[run.first])
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while not run.done:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    return True
                sel.select(timeout=min(wait, POLL))
                exited = proc.poll() is not None
                chunk, closed = _available(fd)
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    deadline = _line(line, run, limits, deadline, progress)
                if exited or (closed and proc.poll() is not None):
                    return False
                if closed:  # every writer is gone: only the exit status is left to wait for
                    sel.unregister(fd)
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            return False
    except subprocess.TimeoutExpired:
        return True
    finally:
        os.close(fd)


def _available(fd: int) -> Tuple[bytes, bool]:
    """What can be read now without waiting, and whether the pipe is closed."""
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return out, False
        if not chunk:
            return out, True
        out += chunk


def _line(line: bytes, run: _Run, limits: Mapping[str, float], deadline: float,
          progress: Optional[Progress]) -> float:
    """Apply one line: the worker's record, or, without its token, the target's own output."""
    event = decode(line, run.token)
    if event is None:
        if line.strip() and len(run.noise) < 20:
            run.noise.append(line[:500])
        return deadline
    return _apply(event, run, limits, deadline, progress)


def _apply(
    event: Event,
    run: _Run,
    limits: Mapping[str, float],
    deadline: float,
    progress: Optional[Progress],
) -> float:
    now = time.monotonic()
    if event.kind == "hello":
        run.hello = event
        return run.started_at + limits[run.first]  # past the handshake: the first stage's clock
    if event.kind == "start" and event.stage is not None:
        stage = event.stage
        if run.started is not None:  # the first stage's clock started with the process
            run.started_at = now
            deadline = now + limits.get(stage, deadline - now)
        run.started, run.importing = stage, None
        if progress is not None:
            progress(stage)
    elif event.kind == "import":
        run.importing = event.module
    elif event.kind == "result" and event.stage is not None:
        failure = _reported(event.failure) if not event.ok else None
        run.outcomes[event.stage] = StageOutcome(
            event.stage, event.ok and event.data is not None, data=event.data,
            failure=failure, seconds=round(now - run.started_at, 4),
        )
    elif event.kind == "done":
        run.done = True
    return deadline


def _reported(record: Optional[Dict[str, Any]]) -> StageFailure:
    """The failure a result record reports, keeping only the fields a failure has."""
    fields = {k: v for k, v in (record or {}).items() if k in StageFailure.__dataclass_fields__}
    try:
        return StageFailure(**{"kind": "error", "reason": "the worker gave no reason", **fields})
    except TypeError:
        return StageFailure(kind="error", reason="the worker's failure record is malformed")


def _drain(proc: subprocess.Popen[bytes], output: Deque[bytes]) -> None:
    assert proc.stdout is not None
    size = 0
    for chunk in iter(lambda: proc.stdout.read1(8192), b""):  # type: ignore[union-attr,attr-defined]
        output.append(chunk)
        size += len(chunk)
        while size - len(output[0]) > TAIL_BYTES and len(output) > 1:
            size -= len(output.popleft())


def _tail(output: Deque[bytes], noise: Sequence[bytes] = ()) -> Optional[str]:
    text = b"".join(output)[-TAIL_BYTES:].decode("utf-8", "replace").strip()
    if noise:  # what was written on the channel without the worker's token: the target's doing
        text += "\n[lines on fadoctor's channel that are not the worker's records]\n" + "\n".join(
            line.decode("utf-8", "replace") for line in noise)
    return text.strip() or None


def _failure(
    returncode: int, timed_out: bool, run: _Run, limit: float, tail: Optional[str]
) -> StageFailure:
    stage = run.started or "start-up"
    during = f"stage {stage}" + (f", while importing {run.importing}" if run.importing else "")
    if timed_out:
        return StageFailure(kind="timeout", reason=f"{during} did not finish within {limit:g} s; "
                            "the worker was killed", stderr_tail=tail, importing=run.importing)
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return StageFailure(kind="crash", reason=f"the worker died from {name} during {during}",
                            signal=name, exit_code=returncode, stderr_tail=tail,
                            importing=run.importing)
    return StageFailure(kind="exit", exit_code=returncode, stderr_tail=tail,
                        reason=f"the worker exited with status {returncode} during {during}",
                        importing=run.importing)
