"""The console entry point. `fadoctor --version` is answered before the command line is built
(typer, its pydantic adapters and the commands cost ~0.1 s that the version does not need); every
other call builds the typer app (`cli.app`) and runs it under the one error map (`cli.guard`),
a plain `check` once its target interpreter has been started (`cli.early`)."""

from __future__ import annotations

import sys

from fadoctor.cli.version import version_text


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from fadoctor.cli.output import adopt_standard_streams, write
        from fadoctor.errors import FadoctorError

        adopt_standard_streams()
        try:
            write(version_text())
        except FadoctorError as exc:  # stdout closed or full: the same line and code as any command
            from fadoctor.cli.output import say

            say(f"fadoctor: error: {exc}")
            sys.exit(int(exc.exit_code))
        sys.exit(0)
    from fadoctor.cli.early import start

    try:
        start(sys.argv[1:])  # a plain `check`: its target interpreter starts before typer loads
        from fadoctor.cli.app import app
        from fadoctor.cli.guard import run
    except KeyboardInterrupt:  # stopped while the command line was built: as the command would be
        from fadoctor.cli.output import say
        from fadoctor.errors import ExitCode

        say("fadoctor: interrupted")
        sys.exit(int(ExitCode.INTERRUPTED))
    run(app)
