"""What `fadoctor --version` prints (the fast path in `cli.main` and typer's option in `cli.app`)."""

from __future__ import annotations

from fadoctor import __version__


def version_text() -> str:
    return f"fadoctor {__version__}\n"
