"""What to collect and from which interpreter: the options of `collect` and the choice of the target
(--python, else the active virtualenv, else conda, else fadoctor's own)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Tuple

from fadoctor.errors import UsageError
from fadoctor.probes.kernels import KernelOptions


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
    if python is not None and not python.strip():  # `--python "$UNSET"`: never our own instead
        raise UsageError("--python is empty: give an interpreter or an environment folder")
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
