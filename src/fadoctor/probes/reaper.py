"""No process fadoctor starts outlives it: each worker is registered while it lives, and its whole
tree — its process group, its session and its descendants, found in /proc — is killed on timeout,
once it has answered, on Ctrl-C or SIGTERM, and at exit."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
from typing import Any, Dict, List, Set

_LOCK = threading.Lock()
_LIVE: Dict[int, subprocess.Popen[bytes]] = {}
_STOPPING = threading.Event()


class Stopping(RuntimeError):
    """fadoctor is being interrupted: no new worker starts."""


def spawn(args: List[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start a worker in a session of its own (so that its tree can be told apart)."""
    with _LOCK:
        if _STOPPING.is_set():
            raise Stopping("fadoctor was interrupted")
        proc: subprocess.Popen[bytes] = subprocess.Popen(args, start_new_session=True, **kwargs)
        _LIVE[proc.pid] = proc
    return proc


def release(proc: subprocess.Popen[bytes], grace: float = 0.0) -> int:
    """Kill what is left of the worker's tree (the worker too, unless it exits within `grace`
    seconds), reap the worker, and return its exit status."""
    try:
        status = proc.wait(timeout=grace) if grace else proc.poll()
    except subprocess.TimeoutExpired:
        status = None
    kill_tree(proc.pid)
    if status is None:
        status = proc.wait()
    with _LOCK:
        _LIVE.pop(proc.pid, None)
    return status


def kill_tree(pid: int) -> None:
    """SIGKILL `pid`, its descendants, and every process in its process group or session (a
    grandchild that left the group is still a descendant; one that was orphaned is still in the
    session, unless it called setsid too)."""
    for victim in sorted(_tree(pid)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(victim, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _tree(pid: int) -> Set[int]:
    """`pid` and the processes that belong to it, from /proc (only `pid` where /proc is absent)."""
    parents: Dict[int, int] = {}
    found = {pid}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return found
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        ppid, pgrp, session = int(fields[1]), int(fields[2]), int(fields[3])
        parents[int(entry)] = ppid
        if pid in (pgrp, session):
            found.add(int(entry))
    grew = True
    while grew:
        more = {child for child, parent in parents.items() if parent in found} - found
        found |= more
        grew = bool(more)
    found.discard(os.getpid())
    return found


def stop_all() -> None:
    """Kill every live worker tree, and start no new one: on interrupt and at exit."""
    _STOPPING.set()
    with _LOCK:
        live = list(_LIVE.values())
    for proc in live:
        kill_tree(proc.pid)
    for proc in live:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


atexit.register(stop_all)
