"""The README and docs/ document what exists: every check, every exit code, the stage table, the
CI's test command; their examples are real output; the README stays a front door."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List

import pytest

from fadoctor.checks import ALL_CHECKS
from fadoctor.errors import ExitCode

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"


def _doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_check_table_lists_every_check_with_its_name_and_title() -> None:
    from fadoctor.distributed.checks import JOB_CHECKS

    rows = re.findall(r"^\| (FAD\d{3}) \| ([\w-]+) \| (.+?) \|$", _doc("checks.md"), flags=re.M)
    assert rows == [(c.id, c.name, c.title) for c in (*ALL_CHECKS, *JOB_CHECKS)]


def test_exit_code_table_matches_the_contract() -> None:
    table = dict(re.findall(r"^\| (\d{1,3}) \| (.+?) \|$", README, flags=re.M))
    assert sorted(int(code) for code in table) == sorted(int(c) for c in ExitCode)


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install = '-e ".[test]" "torch==2.13.0+cpu"'  # the CPU build on any machine (issue 18)
    assert install in README and install in ci
    assert "pytest" in README.split("Install and run the tests", 1)[1].splitlines()[1]
    assert 'python -m pytest -q -m "slow or not slow"' in ci  # CI runs the slow tests too
    assert '`pytest -m "slow or not slow"` runs everything' in README


def test_the_abi_example_is_the_fixtures_real_output() -> None:
    block = README.split("flash-attention#853, replayed", 1)[1].split("```", 2)[1]
    golden = (ROOT / "tests" / "golden" / "fa853-cxx11abi-true-wheel-on-pip-torch" / "text.txt")
    shown = [line for line in block.splitlines() if line.strip()]
    assert shown and all(line in golden.read_text(encoding="utf-8").splitlines() for line in shown)


def test_the_job_example_is_the_goldens_real_output() -> None:
    block = _doc("distributed.md").split("replayed\nfrom recorded facts", 1)[1].split("```", 2)[1]
    golden = ROOT / "tests" / "golden-distributed" / "h200-16-ranks" / "text.txt"
    shown = [line for line in block.splitlines() if line.strip()]
    assert shown and all(line in golden.read_text(encoding="utf-8").splitlines() for line in shown)


def test_the_fix_example_is_what_fix_prints() -> None:
    import shlex
    import subprocess
    import sys

    section = _doc("fix.md").split("# What to install", 1)[1]
    block = section.split("```", 2)[1].strip().splitlines()
    command, shown = block[0].removeprefix("$ "), block[1:]
    args = shlex.split(command)
    assert args[0] == "fadoctor"
    done = subprocess.run([sys.executable, "-m", "fadoctor", *args[1:]], capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.splitlines() == shown


def _first_block() -> List[str]:
    block = README.split("```sh", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines()
            if line.strip() and not line.startswith("#")]


def test_the_first_command_is_one_that_a_pep668_python_allows() -> None:
    """A PEP 668 system Python refuses `pip install` outside a virtualenv: lead with pipx or uv,
    the virtualenv form beside them, never a bare pip install."""
    lines = _first_block()
    assert lines[0] == "pipx install . && fadoctor check"
    assert "uv tool install . && fadoctor check" in README.split("```sh", 1)[1].split("```")[0]
    assert lines[1].startswith("python3 -m venv ") and "/bin/pip install ." in lines[1]
    assert not any(line.startswith(("pip install", "python3 -m pip install")) for line in lines)


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["venv", "pipx"])
def test_the_first_command_installs_and_runs_check(tmp_path: Path, tool: str) -> None:
    """Run the README's line as written, in a fresh HOME: it installs and `fadoctor check`
    reports (exit 0 or 1: with no torch and no GPU here, problems are the right answer)."""
    import os
    import shutil
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    env["HOME"] = str(tmp_path)
    if tool == "pipx":
        if shutil.which("pipx") is None:
            pytest.skip("pipx is not installed on this machine")
        env.update(PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"))
        env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    line = next(ln for ln in _first_block() if ln.startswith("pipx" if tool == "pipx"
                                                              else "python3 -m venv"))
    done = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "FAD101 nvidia-driver" in done.stdout and "Traceback" not in done.stderr


def test_stage_table_is_the_registry() -> None:
    from fadoctor.in_target.registry import STAGES

    rows = re.findall(r"^\| (\w+) \| (\w+) \| (\d+) s \| (\w+) \| (.+?) \|$", _doc("how-it-works.md"),
                      flags=re.M)
    assert rows == [(s.name, s.imports, f"{s.timeout:g}", s.facts, s.label) for s in STAGES]
    link = ("(defaults: per stage, in the stage table of "
            "[How it works](docs/how-it-works.md#the-stage-registry))")
    assert link in README


def test_the_triage_example_is_what_triage_prints() -> None:
    from fadoctor.matrix import load_matrix
    from fadoctor.triage.diagnose import triage
    from fadoctor.triage.render import render_text

    section = _doc("triage.md").split("# Diagnosing a pasted report", 1)[1]
    pasted, shown = section.split("```", 4)[1], section.split("```", 4)[3]
    fixture = ROOT / "tests" / "fixtures" / "triage" / "abi-cxx11-string-on-abi0-torch26"
    assert pasted.strip() == (fixture / "report.txt").read_text(encoding="utf-8").strip()
    printed = render_text(triage(pasted.strip() + "\n", load_matrix(None)))
    assert shown.strip().splitlines()[1:] == printed.rstrip().splitlines()


def test_the_first_output_is_what_check_prints_on_the_recorded_facts() -> None:
    """The README's first output is `check --facts` on the H200's recorded facts, line for line."""
    import subprocess
    import sys

    intro, block = README.split("## What it prints", 1)[1].split("```", 2)[:2]
    facts = "tests/fixtures/recorded/h200-torch211-fa4-kernels-default.json"
    assert f"`fadoctor check --facts {facts}`" in intro
    command, *shown = block.strip("\n").splitlines()
    assert command == "$ fadoctor check"
    done = subprocess.run([sys.executable, "-m", "fadoctor", "check", "--facts", str(ROOT / facts)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == shown


def test_the_readme_is_a_front_door_to_every_page_of_docs() -> None:
    assert len(README.encode("utf-8")) <= 25_000
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert pages and [p for p in pages if f"](docs/{p})" not in README] == []


def _prose(text: str) -> str:
    """The text outside code blocks and code spans, where Markdown reads links."""
    return re.sub(r"`[^`\n]*`", "", _without_blocks(text))


def _without_blocks(text: str) -> str:
    return "".join(re.split(r"^```.*?^```[^\n]*$", text, flags=re.M | re.S))


def _anchors(text: str) -> List[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
    hyphens, the second of a name `-1`, the third `-2`."""
    anchors: List[str] = []
    taken: Dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", _without_blocks(text), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors.append(slug if slug not in taken else f"{slug}-{taken[slug]}")
        taken[slug] = taken.get(slug, 0) + 1
    return anchors


def _pages() -> List[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_every_relative_link_reaches_a_file_and_its_anchor(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", _prose(text))
    broken = []
    for link in links:
        if re.match(r"[a-z][a-z0-9+.-]*:", link):
            continue  # https:, mailto: are not files of the repository
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists() or (anchor and (target.suffix != ".md" or anchor not in
                                               _anchors(target.read_text(encoding="utf-8")))):
            broken.append(link)
    assert broken == []


_REPO_PATH = re.compile(r"(?<![\w/.-])((?:src|tests|benchmarks|schemas|data|tools|docs|\.github|\.ci)"
                        r"/[\w./-]*[\w/])")


def test_every_repository_path_named_as_code_exists() -> None:
    """A path of this repository written as code (`src/fadoctor/...`, `tests/...`) in the README or
    docs/ names a file or folder that exists: the docs follow the layout."""
    named = {(page.name, found) for page in _pages()
             for span in re.findall(r"`([^`\n]+)`", _without_blocks(page.read_text(encoding="utf-8")))
             for found in _REPO_PATH.findall(span)}
    assert len(named) > 50
    assert sorted((page, path) for page, path in named if not (ROOT / path).exists()) == []
