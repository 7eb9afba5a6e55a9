"""Where every command's output goes: stdout for "-", else the file (an unwritable one is bad
input, exit 2)."""

from __future__ import annotations

import sys
from pathlib import Path

from fadoctor.errors import InputError


def write_output(path: Path, text: str) -> None:
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc
