"""`fadoctor matrix lint` and `fadoctor matrix show`: a typer sub-app over the matrix.

Register it on the main app with `app.add_typer(matrix_app, name="matrix")`. Importing this
module is cheap (the matrix, pydantic and rich load inside the commands), so `fadoctor --help`
stays instant.
"""

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from fadoctor.cli.guard import guarded
from fadoctor.errors import ExitCode
from fadoctor.safety.inert import one_line, visible

matrix_app = typer.Typer(
    name="matrix",
    help="Check or print fadoctor's compatibility matrix.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

MATRIX_HELP = "The matrix YAML (default: the one fadoctor ships)."


class ShowFormat(str, Enum):
    text = "text"
    json = "json"


@matrix_app.command()
@guarded
def lint(matrix_path: Optional[Path] = typer.Option(None, "--matrix", metavar="PATH",
                                                    help=MATRIX_HELP)) -> int:
    """Validate the matrix: schema, sources and cross-entry invariants (exit 2 when invalid)."""
    from fadoctor.cli.output import say, write
    from fadoctor.matrix.load import default_matrix_path, lint_matrix
    from fadoctor.safety.textfile import shown

    path = matrix_path or default_matrix_path()
    problems = lint_matrix(path)
    write("".join(f"matrix {shown(path)} is invalid: {one_line(line)}\n" for line in problems)
          or f"matrix {shown(path)} is valid\n")
    if problems:
        say(f"fadoctor: {len(problems)} problem(s) in {shown(path)}")
        return ExitCode.USAGE
    return ExitCode.OK


@matrix_app.command()
@guarded
def show(
    flash_attn: Optional[str] = typer.Option(None, "--flash-attn", metavar="VERSION",
                                             help="A flash-attn 2.x "
                                             "release (2.8.3) or series (2.8)."),
    torch: Optional[str] = typer.Option(None, "--torch", metavar="VERSION",
                                        help="A torch release (2.6, 2.6.0)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", metavar="GPU",
                                      help="A GPU name (H100) or compute "
                                      "capability (9.0, sm_90)."),
    fmt: ShowFormat = typer.Option(ShowFormat.text, "--format", "-f", help="text or json."),
    matrix_path: Optional[Path] = typer.Option(None, "--matrix", metavar="PATH",
                                               help=MATRIX_HELP),
) -> int:
    """Print the matrix entries for a flash-attn version, a torch release and/or a GPU."""
    from fadoctor.cli.output import colour, width, write
    from fadoctor.matrix.load import load_matrix
    from fadoctor.matrix.show import Filters, select, to_json, to_text

    picked = select(load_matrix(matrix_path), Filters(flash_attn, torch, gpu))
    if fmt == ShowFormat.json:
        write(to_json(picked))
        return ExitCode.OK
    write(visible(to_text(picked, width=width(120), color=colour(1)), keep="\n\t\x1b"))
    return ExitCode.OK
