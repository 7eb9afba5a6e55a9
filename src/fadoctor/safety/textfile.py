"""Reading a file the user names (facts, matrix, model config, a job's records, a pasted report)
as bounded UTF-8 text: only a regular file is opened for reading (a FIFO, a device such as
/dev/zero, a folder or a socket is refused before any read, so nothing can hang or fill memory),
and one larger than the cap is refused. Every way it can fail is an InputError that names the
file, with its undecodable bytes and control characters escaped."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Dict, Union

from fadoctor.errors import InputError
from fadoctor.safety.inert import one_line

MIB = 1 << 20
DEFAULT_LIMIT = 64 * MIB  # a facts file is ~100 kB; a job's facts ~100 kB per rank
# Each file this command read (absolute path -> what it was): the writer of the report refuses
# to overwrite one of them (`check --facts F -o F` would destroy its own input).
READ: Dict[str, str] = {}


def shown(path: Union[Path, str]) -> str:
    """A path as a message shows it: undecodable bytes and control characters escaped."""
    return one_line(os.fspath(path))


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: Union[Path, str], what: str, limit: int = DEFAULT_LIMIT) -> bytes:
    """The bytes of the regular file at `path` (a link is followed), at most `limit` of them.
    The file is opened non-blocking and checked with fstat before the first read: a FIFO
    opened so returns at once, and is refused as what it is."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read {what} {shown(path)}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what} {shown(path)} is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise InputError(f"{what} {shown(path)} is larger than {limit // MIB} MB "
                             f"({st.st_size // MIB} MB)")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(f"cannot read {what} {shown(path)}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while being read
        raise InputError(f"{what} {shown(path)} is larger than {limit // MIB} MB")
    READ[os.path.abspath(path)] = what
    return data


def an_input(path: Union[Path, str]) -> str:
    """What an input this command read is, where `path` names the same file (a link, another
    spelling, a hard link: os.path.samefile); '' where it names none or does not exist yet."""
    for seen, what in READ.items():
        try:
            if os.path.samefile(seen, path):
                return f"{what} {shown(seen)}"
        except OSError:  # one of them does not exist (any more)
            continue
    return ""


def decoded(data: bytes, path: Union[Path, str], what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {shown(path)} is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                         f"at offset {exc.start}); save it as UTF-8") from None


def read_text(path: Union[Path, str], what: str, limit: int = DEFAULT_LIMIT) -> str:
    """The file's text; `what` names it in errors ("facts file", "matrix")."""
    return decoded(read_bytes(path, what, limit), path, what)
