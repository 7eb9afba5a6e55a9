"""How typer draws --help, corrected where it misleads: its own -h/--help shows the type `<bool>`,
and a word longer than the help column is cut with "…" (a narrow terminal loses the text)."""

from __future__ import annotations

from typing import Any


def flag_help(command: Any) -> None:
    """-h/--help is a flag: give typer's help option the empty metavar of every other flag
    (fadoctor.cli.options.FLAG), in each (sub)command, and fold long words when it draws."""
    made = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        option = made(ctx)
        if option is not None and not getattr(option, "fadoctor_flag", False):
            option.metavar = ""
            option.fadoctor_flag = True
            show = option.callback

            def callback(ctx: Any, param: Any, value: Any) -> Any:
                if value:
                    fold_long_words()
                return show(ctx, param, value) if show is not None else value

            option.callback = callback
        return option

    command.get_help_option = get_help_option
    for sub in (getattr(command, "commands", None) or {}).values():
        flag_help(sub)


def fold_long_words() -> None:
    """Help texts wrap at word boundaries; a word wider than the column is folded onto the next
    line instead of being cut with "…" (rich's default for a table cell). Typer builds each help
    text in one function; if a typer release renames it, the help is drawn as typer draws it."""
    try:
        from rich.text import Text
        from typer import rich_utils
    except ImportError:  # typer without rich draws plain help, which never cuts
        return
    make = getattr(rich_utils, "_make_rich_text", None)
    if make is None or getattr(make, "folds", False):
        return

    def folded(*args: Any, **kwargs: Any) -> Any:
        text = make(*args, **kwargs)
        if isinstance(text, Text):
            text.overflow = "fold"
        return text

    folded.folds = True  # type: ignore[attr-defined]
    rich_utils._make_rich_text = folded
