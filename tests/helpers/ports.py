"""A TCP port free on this machine now: tests that start a rendezvous take one each, so two
suites running at once on one machine do not collide on a fixed MASTER_PORT."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
