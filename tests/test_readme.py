"""The README documents what exists: every check, every exit code, the CI's test command."""

from __future__ import annotations

import re
from pathlib import Path

from fadoctor.checks import ALL_CHECKS
from fadoctor.errors import ExitCode

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_check_table_lists_every_check_with_its_name_and_title() -> None:
    rows = re.findall(r"^\| (FAD\d{3}) \| ([\w-]+) \| (.+?) \|$", README, flags=re.M)
    assert rows == [(c.id, c.name, c.title) for c in ALL_CHECKS]


def test_exit_code_table_matches_the_contract() -> None:
    table = dict(re.findall(r"^\| (\d{1,3}) \| (.+?) \|$", README, flags=re.M))
    assert sorted(int(code) for code in table) == sorted(int(c) for c in ExitCode)


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install = '-e ".[test]" "torch==2.13.0"'
    assert install in README and install in ci
    assert "pytest" in README.split("Install and run the tests", 1)[1].splitlines()[1]
    assert "python -m pytest" in ci


def test_the_abi_example_is_the_fixtures_real_output() -> None:
    block = README.split("flash-attention#853, replayed", 1)[1].split("```", 2)[1]
    golden = (ROOT / "tests" / "golden" / "fa853-cxx11abi-true-wheel-on-pip-torch" / "text.txt")
    shown = [line for line in block.splitlines() if line.strip()]
    assert shown and all(line in golden.read_text(encoding="utf-8").splitlines() for line in shown)


def test_the_fix_example_is_what_fix_prints() -> None:
    import shlex
    import subprocess
    import sys

    section = README.split("## What to install", 1)[1]
    block = section.split("```", 2)[1].strip().splitlines()
    command, shown = block[0].removeprefix("$ "), block[1:]
    args = shlex.split(command)
    assert args[0] == "fadoctor"
    done = subprocess.run([sys.executable, "-m", "fadoctor", *args[1:]], capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.splitlines() == shown
