"""What fadoctor writes: the report to stdout or a file, one-line messages to stderr, in any
locale and to any stream. A report that cannot be delivered (stdout closed, a broken pipe, a full
disk) is an OutputError, exit 4; a closed stderr silences messages but never changes the code."""

from __future__ import annotations

import codecs
import errno
import io
import os
import sys
from pathlib import Path
from typing import Optional, Set

from fadoctor.errors import OutputError, UsageError
from fadoctor.safety.inert import one_line
from fadoctor.safety.textfile import an_input, shown

# The symbols of the text report, for a terminal whose encoding lacks them (a Latin-1 locale).
ASCII = str.maketrans({"✓": "+", "✗": "x", "→": "->", "—": "-", "–": "-", "…": "..."})  # noqa: RUF001
CLOSED: Set[int] = set()  # standard descriptors that were closed when fadoctor started


class _Closed(io.TextIOWrapper):
    """sys.stdout when fd 1 was closed: writing fails (so the help or the version is not lost
    silently); flushing at exit does not."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8")

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "stdout is closed")

    def isatty(self) -> bool:
        return False


def adopt_standard_streams() -> None:
    """Put /dev/null on any of fds 0-2 that is closed, and remember which: otherwise the next
    pipe takes that number, and a child's stdout or stderr would be written into it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            CLOSED.add(fd)
    if 1 in CLOSED:
        sys.stdout = _Closed()
    if 2 in CLOSED:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the process)


def say(line: str) -> None:
    """One inert line on stderr; nothing when stderr is closed or broken."""
    stream = sys.stderr
    if stream is None or 2 in CLOSED:
        return
    try:
        stream.write(one_line(line) + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def encode(text: str, encoding: Optional[str]) -> bytes:
    """`text` in the stream's encoding: symbols it lacks in ASCII, anything else escaped."""
    name = codecs.lookup(encoding or "utf-8").name
    try:
        return text.encode(name)
    except UnicodeEncodeError:
        return text.translate(ASCII).encode(name, errors="backslashreplace")


def write(text: str, path: Optional[Path] = None) -> None:
    """Deliver `text` to `path`, or to stdout when it is None or '-'; never over a file this
    command read."""
    if path is not None and str(path) != "-":
        same = an_input(path)
        if same:
            raise UsageError(f"--output {shown(path)} is the {same} this command read: "
                             "writing would destroy it; name another file")
        try:
            path.write_bytes(text.encode("utf-8"))
        except OSError as exc:
            raise OutputError(f"cannot write {shown(path)}: {exc.strerror or exc}") from None
        return
    stream = sys.stdout
    if stream is None or 1 in CLOSED:
        raise OutputError("cannot write the report: stdout is closed")
    try:
        stream.flush()
        stream.buffer.write(encode(text, stream.encoding))
        stream.buffer.flush()
    except (OSError, ValueError) as exc:
        silence_stdout()
        raise OutputError("cannot write the report to stdout: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None


def silence_stdout() -> None:
    """Point fd 1 at /dev/null, so that the interpreter's last flush at exit cannot fail again
    (and turn the exit code into 120)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


def terminal(fd: int) -> bool:
    """Whether fd is a terminal that takes colour and cursor movement (not closed, not
    TERM=dumb)."""
    if fd in CLOSED or os.environ.get("TERM") in ("dumb", "unknown"):
        return False
    try:
        return os.isatty(fd)
    except OSError:
        return False


def colour(fd: int = 1) -> bool:
    """Colour on fd: a terminal, and NO_COLOR unset or empty (no-color.org)."""
    return terminal(fd) and not os.environ.get("NO_COLOR")


def columns(default: int) -> int:
    """The width to render for: COLUMNS where it is set (as a shell, typer and rich read it, also
    off a terminal: `COLUMNS=80 fadoctor ... | less`), else the terminal's (`width`)."""
    text = os.environ.get("COLUMNS", "")
    if text.isdigit() and int(text) >= 20:
        return int(text)
    return width(default)


def width(default: int) -> int:
    """The terminal's width on stdout, or `default` off a terminal or where the terminal says 0
    (a fresh pty, a serial console): a report never renders to nothing."""
    if not terminal(1):
        return default
    try:
        columns = os.get_terminal_size(1).columns
    except OSError:
        return default
    return columns if columns >= 20 else default
