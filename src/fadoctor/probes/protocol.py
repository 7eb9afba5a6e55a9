"""The parent's side of the worker protocol, in one place: the command line that starts a worker,
the token that authenticates its records, and their decoding (the writing side is
`fadoctor.in_target.protocol`). A line without the token, or not a well-formed record, is not the
worker's: `decode` returns None, and the runner keeps it as output of the target."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import fadoctor.in_target

# The target package, run by path: it loads itself without going on the target's sys.path.
WORKER = (Path(fadoctor.in_target.__file__).parent / "__main__.py").resolve()
MINIMUM_PYTHON = (3, 8)


def command(python: str, stages: Sequence[str], fd: int,
            options: Optional[Mapping[str, str]] = None) -> List[str]:
    # -B: write no bytecode into the examined environment. No -I/-E/-s: the worker must see the
    # user's PYTHONPATH, user site and environment, as their training would.
    args = [python, "-B", str(WORKER), "--fd", str(fd), "--stages", ",".join(stages)]
    for key, value in (options or {}).items():
        args += ["--option", f"{key}={value}"]
    return args


def new_token() -> str:
    """A worker's token, given on its stdin (not its command line or environment, which the code
    it imports can read)."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class Event:
    """One record: `hello` (the interpreter answered), `start` (a stage began), `import` (a module
    is being imported; None when that is over), `result` (its data or failure), `done`."""

    kind: str
    stage: Optional[str] = None
    ok: bool = False
    data: Optional[Dict[str, Any]] = None
    failure: Optional[Dict[str, Any]] = None
    module: Optional[str] = None
    python: Optional[Tuple[int, ...]] = None


_KINDS = ("hello", "start", "import", "result", "done")


def decode(line: bytes, token: str) -> Optional[Event]:
    """The record on `line`, or None when it is not the worker's."""
    prefix = token.encode("ascii") + b" "
    if not line.startswith(prefix):
        return None
    try:
        record = json.loads(line[len(prefix):])
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("event") not in _KINDS:
        return None
    fields = {"stage": str, "data": dict, "failure": dict, "module": str}
    if any(record.get(k) is not None and not isinstance(record[k], t) for k, t in fields.items()):
        return None
    return Event(kind=record["event"], stage=record.get("stage"), ok=record.get("ok") is True,
                 data=record.get("data"), failure=record.get("failure"),
                 module=record.get("module"), python=_version(record.get("python")))


def _version(value: Any) -> Optional[Tuple[int, ...]]:
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return tuple(value)
    return None
