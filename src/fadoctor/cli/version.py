"""What `fadoctor --version` prints (the fast path in `cli.main` and typer's option in `cli.app`):
fadoctor's version and the date of its matrix data, read without YAML or pydantic."""

from __future__ import annotations

from fadoctor import __version__


def version_text() -> str:
    from fadoctor.matrix.dated import data_date

    when = data_date()
    return f"fadoctor {__version__}" + (f" (matrix data of {when})" if when else "") + "\n"
