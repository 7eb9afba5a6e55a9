"""`fadoctor snippet` and `fadoctor explain`: the tested code remedies and each check's documentation."""

from pathlib import Path
from typing import Optional

import typer

from fadoctor.cli.common import _write
from fadoctor.cli.guard import guarded
from fadoctor.errors import ExitCode, UsageError


@guarded
def snippet(snippet_id: Optional[str] = typer.Argument(None, metavar="[ID]",
                                                      help="Snippet ID.")) -> int:
    """Print a tested code remedy (the SDPA drop-in, torch.compile controls), or list them."""
    from fadoctor.snippets import SNIPPETS

    if snippet_id is None:
        for s in SNIPPETS:
            _write(Path("-"), f"{s.id:<28} {s.title}\n")
        return ExitCode.OK
    found = next((s for s in SNIPPETS if s.id == snippet_id), None)
    if found is None:
        raise UsageError(f"no snippet {snippet_id!r}; `fadoctor snippet` lists them")
    _write(Path("-"), found.code.rstrip() + "\n")
    return ExitCode.OK


@guarded
def explain(check_id: Optional[str] = typer.Argument(None, metavar="[FADxxx]",
                                                     help="Check ID or name.")) -> int:
    """Document a check, or list them all."""
    from fadoctor.distributed.checks import EVERY_CHECK, EVERY_KEY

    if check_id is None:
        for c in EVERY_CHECK:
            _write(Path("-"), f"{c.id}  {c.name:<24} {c.title}\n")
        return ExitCode.OK
    found = EVERY_KEY.get(check_id) or EVERY_KEY.get(check_id.upper())
    if found is None:
        raise UsageError(f"no check {check_id!r}; `fadoctor explain` lists them")
    from fadoctor.checks.docs import documentation
    from fadoctor.matrix import load_matrix

    _write(Path("-"), f"{found.id} {found.name}: {found.title}\n\n"
                      f"{documentation(found, load_matrix())}\n")
    return ExitCode.OK
