"""What the commands read from their arguments before any work: an --extension that must be an
ELF file, a facts file to diagnose, the named binaries `--only` gates on, --only and --ignore
that contradict, and redaction of what is reported."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, TypeVar

from fadoctor.errors import UsageError, invalid

if TYPE_CHECKING:
    from pydantic import BaseModel

    from fadoctor.facts.model import Facts

M = TypeVar("M", bound="BaseModel")


def _named_binaries(facts: Facts, extensions: List[Path]) -> Facts:
    """The facts with only the named extensions' analyses: `--only` with `--extension` gates on
    those files alone, not on every other extension of the environment."""
    if facts.binaries is None or facts.binaries.data is None:
        return facts
    named = {os.path.realpath(p) for p in extensions}
    kept = [b for b in facts.binaries.data if os.path.realpath(b.file.path) in named]
    return facts.model_copy(update={"binaries": facts.binaries.model_copy(update={"data": kept})})


def _check_extension(path: Path) -> None:
    """An --extension must be an ELF file: a folder or any other file is bad input (exit 2)."""
    if path.is_dir():
        raise UsageError(f"--extension {path}: a directory, not a compiled extension (.so)")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise UsageError(f"--extension {path}: {exc.strerror or 'cannot be read'}") from exc
    if magic != b"\x7fELF":
        raise UsageError(f"--extension {path}: not an ELF shared object")


def _read_facts(path: Path) -> Facts:
    from pydantic import ValidationError

    from fadoctor.facts.files import loads
    from fadoctor.safety.textfile import read_text, shown

    text = read_text(path, "facts file")
    try:
        return loads(text, f"facts file {shown(path)}")
    except ValidationError as exc:
        from fadoctor.facts.validation import problems

        raise invalid(f"facts file {shown(path)}", problems(exc)) from exc


def _check_ignore(keys: List[str], option: str = "--ignore") -> None:
    from fadoctor.checks import BY_KEY

    unknown = [key for key in keys if key not in BY_KEY]
    if unknown:
        raise UsageError(f"{option} {unknown[0]}: no such check (see `fadoctor explain`)")


def told(facts: Facts) -> Facts:
    """One line on stderr when the examined environment is the virtualenv fadoctor runs from,
    chosen because none is active (after `pipx install`, the README's first command, that is
    fadoctor's own, which holds no torch): how to examine the one you train in."""
    from fadoctor.cli.output import say, terminal

    # On a terminal only: a log or a pipe keeps stderr to the one error line it may carry.
    if facts.target.chosen_by != "current" or sys.prefix == sys.base_prefix or not terminal(2):
        return facts
    from fadoctor.safety.textfile import shown

    say(f"fadoctor: examining the environment fadoctor runs from ({shown(Path(sys.prefix))}): no "
        "virtualenv or conda env is active. To examine the one you train in, activate it first, "
        "or pass --python PATH (its interpreter or folder).")
    return facts


def _redacted(model: M, redact: bool) -> M:
    """`model` with every value redacted (before a renderer shortens or escapes any)."""
    if not redact:
        return model
    from fadoctor.cli.identity import this_machine
    from fadoctor.safety.redact import redacted

    return redacted(model, this_machine())


def _check_only_ignore(only: List[str], ignore: List[str]) -> None:
    """--only X --ignore X would run nothing and pass: a CI gate that gates nothing."""
    from fadoctor.checks import BY_KEY

    both = sorted({BY_KEY[k].id for k in only} & {BY_KEY[k].id for k in ignore})
    if both:
        raise UsageError(f"--only and --ignore both name {', '.join(both)}: say which")
