"""The worker's side of the protocol, in one place: the request it reads from its command line and
the records it writes to the parent.

    <python> -B .../__main__.py --fd N --stages host,packages,fa2 [--option KEY=VALUE ...]

The parent writes a random token, new for each worker, on its stdin. The worker writes one
record per line on file descriptor N, each `<token> <JSON>` (stdout and stderr stay free for
whatever the imported libraries print; a line without the token is not the worker's):

    <token> {"event": "hello", "python": [3, 11, 7], ...}     (__main__.py, before any import)
    <token> {"event": "start", "stage": "fa2"}
    <token> {"event": "import", "stage": "fa2", "module": "torch"}
    <token> {"event": "result", "stage": "fa2", "ok": true, "data": {...}}
    <token> {"event": "result", "stage": "fa3", "ok": false, "failure": {...}}
    <token> {"event": "done"}

A stage that kills the process (segfault, abort) or hangs never writes its result; the parent
sees which stage had started, and which import in it, records the failure and starts a new worker
past it. The parent's reading side is `fadoctor.probes.protocol`.
"""

import os
import traceback
from typing import Any, Callable, Dict, List, NamedTuple, Optional

from .tables import TAIL


class Request(NamedTuple):
    fd: Optional[int]  # where records go; None: stdout
    stages: List[str]
    options: Dict[str, str]  # run-wide settings every stage can read (context.options)


def parse_args(argv: List[str]) -> Request:
    fd, stages, options = None, [], {}  # type: Optional[int], List[str], Dict[str, str]
    i = 0
    while i < len(argv):
        flag = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) else ""
        if flag == "--fd":
            fd = int(value)
        elif flag == "--stages":
            stages = [s for s in value.split(",") if s]
        elif flag == "--option":
            key, _, val = value.partition("=")
            options[key] = val
        else:
            i += 1
            continue
        i += 2
    return Request(fd, stages, options)


def failure(exc: BaseException, kind: Optional[str] = None) -> Dict[str, Any]:
    """The record of a failure (the fields of fadoctor.facts.model.Failure) for an exception."""
    if kind is None:
        kind = "import_error" if isinstance(exc, (ImportError, OSError)) else "error"
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"kind": kind, "reason": ("%s" % exc)[:TAIL], "exception_type": type(exc).__name__,
            "traceback_tail": tb[-TAIL:]}


class Channel:
    """Writes the records through `send` (__main__.py's: one authenticated line, written whole at
    once, since the next line may be a crash). The descriptor is not inherited by the programs
    the imported code starts."""

    def __init__(self, fd: Optional[int], send: Callable[[Dict[str, Any]], None]) -> None:
        if fd is not None:
            os.set_inheritable(fd, False)
        self._emit = send
        self._stage = None  # type: Optional[str]

    def start(self, stage: str) -> None:
        self._stage = stage
        self._emit({"event": "start", "stage": stage})

    def importing(self, module: Optional[str]) -> None:
        """Said before an import that may crash or hang (and with None after it): the parent
        then knows whose a crash was."""
        self._emit({"event": "import", "stage": self._stage, "module": module})

    def result(self, stage: str, data: Dict[str, Any]) -> None:
        self._emit({"event": "result", "stage": stage, "ok": True, "data": data})

    def failed(self, stage: str, exc: BaseException) -> None:
        self._emit({"event": "result", "stage": stage, "ok": False, "failure": failure(exc)})

    def done(self) -> None:
        self._emit({"event": "done"})
