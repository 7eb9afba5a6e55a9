"""Reading a file the user names (facts, matrix) as UTF-8 text: every way it can fail is an
InputError that names the file, with its undecodable bytes and control characters escaped."""

from __future__ import annotations

import os
from pathlib import Path

from fadoctor.errors import InputError
from fadoctor.safety.inert import one_line


def shown(path: Path) -> str:
    """A path as a message shows it: undecodable bytes and control characters escaped."""
    return one_line(os.fspath(path))


def read_bytes(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} {shown(path)}: {exc.strerror or exc}") from None


def read_text(path: Path, what: str) -> str:
    """The file's text; `what` names it in errors ("facts file", "matrix")."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {shown(path)} is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                         f"at offset {exc.start}); save it as UTF-8") from None
