"""A plain `check` starts its target interpreter before the command line is built (`cli.early`):
it reads the arguments exactly as typer does, or not at all, and the check adopts what it
started instead of starting a second worker."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import typer

from fadoctor.cli import early
from fadoctor.cli.app import app
from fadoctor.cli.early import Relay, adopt, collect_options, kernel_options, plain_check

READ_HERE = [
    ["check"],
    ["check", "--python", "/usr/bin/python3"],
    ["check", "--python=/opt/env/bin/python", "--static"],
    ["check", "-f", "json", "-v", "--fail-on", "warning", "--redact"],
    ["check", "--format=markdown", "--matrix", "m.yaml", "-o", "out.txt", "--verbose"],
    ["check", "--python", ""],
]
LEFT_TO_TYPER = [
    [], ["--help"], ["--version"], ["--debug", "check"], ["snapshot", "-o", "x"],
    ["check", "--help"], ["check", "-h"], ["check", "--facts", "f.json"],
    ["check", "--timeout", "30"], ["check", "--extension", "x.so"], ["check", "--kernels", "full"],
    ["check", "--compile"], ["check", "--distributed"], ["check", "--only", "FAD101"],
    ["check", "--model", "llama"], ["check", "-v", "-v"], ["check", "--python", "a", "--python", "b"],
    ["check", "--format", "yaml"], ["check", "-f=json"], ["check", "--verbose=1"],
    ["check", "--python"], ["check", "--python", "-v"], ["check", "--", "--static"],
    ["check", "--bogus"], ["check", "extra"], ["Check"],
]


@pytest.mark.parametrize("argv", READ_HERE, ids=" ".join)
def test_what_it_reads_typer_reads_the_same(argv: List[str]) -> None:
    command = typer.main.get_command(app)
    with command.make_context("fadoctor", [argv[0]]) as root:
        check = command.get_command(root, "check")  # type: ignore[attr-defined]
        parsed = check.make_context("check", argv[1:], parent=root).params
    found = plain_check(argv)
    assert found is not None
    assert found.get("python") == parsed["python"]
    assert bool(found.get("static")) == parsed["static"]
    # What decides the collection besides: all left at typer's defaults.
    assert (parsed["timeout"], list(parsed["extension"]), parsed["kernels"], parsed["compile_"],
            parsed["facts_file"], parsed["distributed"], parsed["facts_dir"]) == \
        (None, [], None, False, None, False, None)


@pytest.mark.parametrize("argv", LEFT_TO_TYPER, ids=lambda a: " ".join(a) or "(none)")
def test_anything_else_is_left_to_the_command_line(argv: List[str]) -> None:
    assert plain_check(argv) is None


def test_the_relay_shows_the_latest_stage_once_attached_then_each() -> None:
    shown: List[str] = []
    relay = Relay()
    relay("host")
    relay("packages")
    relay.attach(shown.append)
    relay("files")
    assert shown == ["packages", "files"]


def test_a_collection_is_adopted_only_with_the_same_options() -> None:
    argv = ["check", "--python", sys.executable, "--static"]
    same = collect_options(sys.executable, None, True, [], kernel_options(None, False))
    early.start(argv)
    collection = adopt(same)
    assert collection is not None
    assert collection.facts().host.ok
    early.start(argv)
    assert adopt(collect_options(sys.executable, None, False, [], kernel_options(None, False))) \
        is None  # not --static: the check starts its own
    assert adopt(same) is None  # nothing left to adopt


def test_a_plain_check_starts_one_worker_and_reports_as_a_command_line_typer_read(
        tmp_path: Path) -> None:
    log = tmp_path / "starts.log"
    python = tmp_path / "python"  # the interpreter, counting its starts
    python.write_text(f'#!/bin/sh\necho start >> "{log}"\nexec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    env: Dict[str, str] = {k: v for k, v in os.environ.items()
                           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}

    def check(*more: str) -> subprocess.CompletedProcess[str]:
        log.unlink(missing_ok=True)
        return subprocess.run([sys.executable, "-m", "fadoctor", "check", "--static", "--python",
                               str(python), *more], capture_output=True, text=True, env=env,
                              timeout=300, check=False)

    plain = check()
    assert log.read_text().count("start") == 1  # --static: one lane, one worker, adopted
    typer_read = check("--timeout", "300")  # not read by cli.early: nothing starts early
    assert log.read_text().count("start") == 1
    assert (plain.returncode, plain.stdout, plain.stderr) == \
        (typer_read.returncode, typer_read.stdout, typer_read.stderr)
