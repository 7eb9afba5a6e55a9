"""The parent's side of the worker protocol, in one place: the command line that starts a worker
and the decoding of the records it writes (the writing side is `fadoctor.target.protocol`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

import fadoctor.target

# The target package, run by path: it loads itself without going on the target's sys.path.
WORKER = (Path(fadoctor.target.__file__).parent / "__main__.py").resolve()


def command(python: str, stages: Sequence[str], fd: int,
            options: Optional[Mapping[str, str]] = None) -> List[str]:
    # -B: write no bytecode into the examined environment. No -I/-E/-s: the worker must see the
    # user's PYTHONPATH, user site and environment, as their training would.
    args = [python, "-B", str(WORKER), "--fd", str(fd), "--stages", ",".join(stages)]
    for key, value in (options or {}).items():
        args += ["--option", f"{key}={value}"]
    return args


@dataclass(frozen=True)
class Event:
    """One record: `start` (a stage began), `result` (its data or failure), `done`."""

    kind: str
    stage: Optional[str] = None
    ok: bool = False
    data: Optional[Dict[str, Any]] = None
    failure: Optional[Dict[str, Any]] = None


def decode(line: bytes) -> Event:
    record = json.loads(line)
    return Event(kind=record.get("event"), stage=record.get("stage"), ok=bool(record.get("ok")),
                 data=record.get("data"), failure=record.get("failure"))
