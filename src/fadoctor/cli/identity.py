"""This machine's user, home and host names, for `--redact` (the I/O half of fadoctor.safety.redact)."""

from __future__ import annotations

import contextlib
import getpass
import os
import socket
from pathlib import Path

from fadoctor.safety.redact import Identity


def this_machine() -> Identity:
    users = {os.environ.get(k, "") for k in ("USER", "LOGNAME", "USERNAME")}
    with contextlib.suppress(KeyError, OSError):
        users.add(getpass.getuser())
    host = socket.gethostname()
    homes = {os.environ.get("HOME", "")}
    with contextlib.suppress(RuntimeError, KeyError):
        homes.add(str(Path.home()))
    return Identity(users=tuple(u for u in users if u),
                    hosts=tuple(h for h in {host, host.split(".")[0]} if h),
                    homes=tuple(h for h in homes if h))
