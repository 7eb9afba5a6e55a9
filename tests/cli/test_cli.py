"""The command line as users run it: real `python -m fadoctor` processes, their output and exit codes.

Exit codes: 0 ok, 1 problems at the --fail-on level, 2 bad usage or input, 3 the doctor failed,
4 the output could not be written, 130 interrupted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

import pytest
from tests.helpers.broken import environ_with_path, library_loads, requires_torch, write_distribution

from fadoctor.checks import ALL_CHECKS
from fadoctor.distributed.checks import JOB_CHECKS
from fadoctor.probes import driver
from fadoctor.render.text import headline
from fadoctor.report import Report


class Run(NamedTuple):
    code: int
    out: str
    err: str


def fadoctor(*args: str, env: Optional[Dict[str, str]] = None, flags: Sequence[str] = ()) -> Run:
    """Run `python [flags] -m fadoctor args` in the test environment (no active venv or conda)."""
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    done = subprocess.run([sys.executable, *flags, "-m", "fadoctor", *args], capture_output=True,
                          text=True, env=env or base, timeout=300, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


def assert_usage_error(run: Run, *words: str) -> None:
    """Exit 2, one line on stderr naming the problem, no traceback, nothing on stdout."""
    assert run.code == 2, run
    assert run.out == ""
    lines = run.err.splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith("fadoctor: error: ")
    assert "Traceback" not in run.err
    for word in words:
        assert word in lines[0]


def ids(report: Dict[str, Any]) -> List[str]:
    return [c["id"] for c in report["checks"]]


NO_DRIVER_HERE = not (library_loads(driver.NVML_LIBRARY) or driver.PROC_VERSION.exists()
                      or shutil.which("nvidia-smi"))


# -- this machine, live -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live_json() -> Run:
    return fadoctor("check", "--python", sys.executable, "--format", "json")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("snapshot") / "facts.json"
    run = fadoctor("snapshot", "-o", str(path), "--python", sys.executable)
    assert run.code == 0, run.err
    assert run.out == ""
    return path


@requires_torch
@pytest.mark.slow
def test_check_text_starts_with_the_summary_line(snapshot: Path) -> None:
    run = fadoctor("check", "--python", sys.executable)
    report = Report.model_validate_json(fadoctor("check", "--facts", str(snapshot), "-f", "json").out)
    first = run.out.splitlines()[0]
    assert first == f"fadoctor: {headline(report)}"
    for c in report.checks:  # one line per check, in order, after the header
        assert any(line.startswith(f"{c.id} ", 2) for line in run.out.splitlines())
    assert run.code == (1 if report.summary.failed else 0)


@requires_torch
@pytest.mark.slow
def test_check_json_is_the_report(live_json: Run) -> None:
    report = json.loads(live_json.out)
    assert report["schema_version"] == 1
    assert report["target"] == {"python": sys.executable, "chosen_by": "--python"}
    assert ids(report) == [c.id for c in ALL_CHECKS]
    for c in report["checks"]:
        assert c["status"] in ("passed", "warning", "failed", "skipped")
        assert all({"category", "severity", "message"} <= set(f) for f in c["findings"])
        if c["status"] == "skipped":
            assert c["skipped_reason"] and not c["findings"]
    errors = [f for c in report["checks"] for f in c["findings"] if f["severity"] == "error"]
    assert live_json.code == (1 if errors else 0)
    assert Report.model_validate(report)


@requires_torch
@pytest.mark.slow
@pytest.mark.skipif(not NO_DRIVER_HERE, reason="this machine has an NVIDIA driver")
def test_check_on_a_machine_without_a_driver_fails(live_json: Run) -> None:
    report = json.loads(live_json.out)
    fad101 = report["checks"][ids(report).index("FAD101")]
    assert fad101["status"] == "failed"
    assert fad101["findings"][0]["category"] == "no_gpu"
    assert live_json.code == 1


@requires_torch
@pytest.mark.slow
def test_a_snapshot_diagnoses_the_same_elsewhere(live_json: Run, snapshot: Path) -> None:
    facts = json.loads(snapshot.read_text())
    assert facts["schema_version"] == 2 and facts["origin"] == "probe"
    assert facts["target"]["python"] == sys.executable
    replay = fadoctor("check", "--facts", str(snapshot), "--format", "json")
    assert replay.code == live_json.code
    assert json.loads(replay.out)["checks"] == json.loads(live_json.out)["checks"]


@requires_torch
@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["junit", "markdown", "github"])
def test_every_format_renders_the_same_report(snapshot: Path, fmt: str) -> None:
    report = Report.model_validate_json(fadoctor("check", "--facts", str(snapshot), "-f", "json").out)
    run = fadoctor("check", "--facts", str(snapshot), "--format", fmt)
    assert run.code == (1 if report.summary.failed else 0) and run.err == ""
    if fmt == "junit":
        suite = ET.fromstring(run.out)
        cases = {t.get("name"): t for t in suite.iter("testcase")}
        assert list(cases) == [c.id for c in report.checks]
        for c in report.checks:
            assert (cases[c.id].find("failure") is not None) == (c.status == "failed")
            assert (cases[c.id].find("skipped") is not None) == (c.status == "skipped")
    elif fmt == "markdown":
        assert run.out.startswith(f"## fadoctor: {headline(report)}\n")
        for c in report.checks:
            assert f"| {c.id} {c.name} | {c.status.value} |" in run.out
    else:  # GitHub workflow commands: one annotation per error or warning finding, then a count
        lines = run.out.splitlines()
        expected = [f"::{f.severity.value} title={c.id} {c.name}::" for c in report.checks
                    for f in c.findings if f.severity != "info"]
        assert [line[:line.index("::", 2) + 2] for line in lines[:-1]] == expected
        assert lines[-1].startswith(f"fadoctor: {report.summary.failed} failed")


@requires_torch
@pytest.mark.slow
def test_output_file_and_ignore(snapshot: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    run = fadoctor("check", "--facts", str(snapshot), "-f", "json", "-o", str(out),
                   "--ignore", "FAD101", "--ignore", "torch-cuda-build")
    assert run.out == ""
    report = json.loads(out.read_text())
    assert "FAD101" not in ids(report) and "FAD103" not in ids(report)
    assert len(ids(report)) == len(ALL_CHECKS) - 2


# -- --fail-on, on a real environment whose only problem is a warning ----------------------------------


@pytest.fixture(scope="module")
def venv_facts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Facts of a fresh virtualenv that sees two copies of einops (one warning from FAD107)."""
    root = tmp_path_factory.mktemp("dupes")
    venv = root / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    first = write_distribution(root / "a", "einops", "0.8.0", {"einops/__init__.py": ""})
    second = write_distribution(root / "b", "einops", "0.7.0", {"einops/__init__.py": ""})
    env = environ_with_path(first, second)
    env.pop("CONDA_PREFIX", None)
    env["VIRTUAL_ENV"] = str(venv)  # the examined environment, chosen as a user's would be
    path = root / "facts.json"
    run = fadoctor("snapshot", "-o", str(path), env=env)
    assert run.code == 0, run.err
    return path


def test_only_gates_the_exit_status_on_the_checks_named(venv_facts: Path) -> None:
    # FAD107 warns and FAD101 (no driver here) fails: --only FAD107 exits on FAD107 alone.
    run = fadoctor("check", "--facts", str(venv_facts), "-f", "json", "--only", "duplicate-installs")
    assert [c["id"] for c in json.loads(run.out)["checks"]] == ["FAD107"]
    assert run.code == 0
    assert fadoctor("check", "--facts", str(venv_facts), "--only", "FAD101").code == 1


def only(check_id: str) -> List[str]:
    return [arg for c in ALL_CHECKS if c.id != check_id for arg in ("--ignore", c.id)]


def test_fail_on_sets_the_severity_that_fails(venv_facts: Path) -> None:
    facts = json.loads(venv_facts.read_text())
    assert facts["target"]["chosen_by"] == "VIRTUAL_ENV"
    default = fadoctor("check", "--facts", str(venv_facts), "-f", "json", *only("FAD107"))
    [check] = json.loads(default.out)["checks"]
    assert check["status"] == "warning"
    assert [f["category"] for f in check["findings"]] == ["version_conflict"]
    assert "einops is installed 2 times" in check["findings"][0]["message"]
    assert default.code == 0
    strict = fadoctor("check", "--facts", str(venv_facts), "--fail-on", "warning",
                      *only("FAD107"))
    assert strict.code == 1
    # The environment has no torch: that is an error at either level.
    assert fadoctor("check", "--facts", str(venv_facts), *only("FAD102")).code == 1


def test_timeout_bounds_the_handshake_too(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexec sleep 600\n")  # starts, then never answers
    python.chmod(0o755)
    started = time.monotonic()
    run = fadoctor("check", "--python", str(python), "--timeout", "1", "-f", "json")
    assert time.monotonic() - started < 20
    # Not an environment whose every stage failed: an interpreter fadoctor cannot examine.
    assert_usage_error(run, "did not answer fadoctor's handshake in time")


# -- bad usage and bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "words"), [
    ("{not json", ["is not valid JSON", "line 1 column 2"]),
    (None, ["cannot read facts file"]),
])
def test_a_bad_facts_file_is_one_line_and_exit_2(tmp_path: Path, content: Optional[str],
                                                 words: List[str]) -> None:
    path = tmp_path / "facts.json"
    if content is not None:
        path.write_text(content)
    assert_usage_error(fadoctor("check", "--facts", str(path)), *words)


def test_an_invalid_facts_file_lists_every_problem_field_by_field(tmp_path: Path) -> None:
    """Not only the first: a header line, then a line per field (exit 2, no traceback)."""
    path = tmp_path / "facts.json"
    path.write_text('{"schema_version": 1, "mode": "sideways"}')
    run = fadoctor("check", "--facts", str(path))
    assert run.code == 2 and run.out == "" and "Traceback" not in run.err
    head, *problems = run.err.splitlines()
    assert head == f"fadoctor: error: facts file {path} is invalid ({len(problems)} problems):"
    assert "  fadoctor_version: Field required" in problems
    assert any(line.startswith("  mode: ") for line in problems)
    assert len(problems) >= 3 and all(line.startswith("  ") for line in problems)


@requires_torch
@pytest.mark.slow
def test_a_facts_file_of_another_schema_version_is_refused(snapshot: Path, tmp_path: Path) -> None:
    facts = json.loads(snapshot.read_text())
    facts["schema_version"] = 99
    path = tmp_path / "future.json"
    path.write_text(json.dumps(facts))
    assert_usage_error(fadoctor("check", "--facts", str(path)), "schema_version 99")


@pytest.mark.parametrize(("yaml_text", "words"), [
    ("families: [unclosed\n", ["is not valid YAML"]),
    ("- just\n- a list\n", ["is invalid: (top level): Input should be a valid dictionary"]),
])
def test_a_bad_matrix_is_one_line_and_exit_2(venv_facts: Path, tmp_path: Path, yaml_text: str,
                                             words: List[str]) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(yaml_text)
    assert_usage_error(fadoctor("check", "--facts", str(venv_facts), "--matrix", str(matrix)),
                       f"matrix {matrix}", *words)


@pytest.mark.parametrize(("args", "words"), [
    (["check", "--python", "/nonexistent/python"], ["--python /nonexistent/python"]),
    (["check", "--ignore", "FAD999"], ["--ignore FAD999", "no such check"]),
    (["check", "--facts", "f.json", "--python", "python3"], ["apply when probing"]),
    (["explain", "NOPE"], ["no check 'NOPE'"]),
    (["check", "--only", "FAD999"], ["--only FAD999", "no such check"]),
    (["check", "--static", "--extension", "tests"], ["--extension tests", "a directory"]),
    (["check", "--static", "--extension", "README.md"], ["--extension README.md", "not an ELF"]),
])
def test_bad_usage_is_one_line_and_exit_2(args: List[str], words: List[str]) -> None:
    assert_usage_error(fadoctor(*args), *words)


def test_explain() -> None:
    one = fadoctor("explain", "FAD111")
    assert one.code == 0
    assert one.out.startswith("FAD111 flash-attn-import: Each installed flash-attention family")
    assert "undefined" in one.out.lower()
    assert fadoctor("explain", "flash-attn-import").out == one.out
    listing = fadoctor("explain")
    assert listing.code == 0
    assert [line.split()[0] for line in listing.out.splitlines()] == [
        c.id for c in ALL_CHECKS] + [c.id for c in JOB_CHECKS]  # the job's, fadoctor.distributed


def test_fix_help_names_its_values_and_shows_no_true_flag() -> None:
    run = fadoctor("fix", "--help", env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"})
    assert run.code == 0
    rows = {line.split()[1]: line for line in run.out.splitlines()
            if line.startswith("│ --")}
    for option, metavar in [("--torch", "VERSION"), ("--gpu-cc", "CC"), ("--platform", "TAG"),
                            ("--python", "VERSION|PATH"), ("--driver", "VERSION")]:
        assert rows[option].split()[2] == metavar, rows[option]
    for flag in ("--print-pins", "--keep-torch", "--no-detect"):
        assert "<bool>" not in rows[flag] and "default" not in rows[flag], rows[flag]
    assert "<str>" not in run.out and "[default: True]" not in run.out


@pytest.mark.parametrize("command", [["check"], ["snapshot"], ["bench"], ["model"], ["triage"],
                                     ["matrix", "show"], ["matrix", "lint"]])
def test_every_option_names_its_value_and_no_flag_shows_a_type(command: List[str]) -> None:
    """Flags show no value; a value is named for what it is (PATH, N, SECONDS...), never by its
    Python type (<str>, <float>) - the built-in --help aside, which typer draws itself."""
    run = fadoctor(*command, "--help", env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"})
    assert run.code == 0, run.out
    options = [line.lstrip("│ *") for line in run.out.splitlines() if line.startswith("│")]
    rows = [o for o in options if o.startswith("--") and not o.startswith("--help")]
    assert rows, run.out
    for row in rows:
        for python_type in ("<bool>", "<str>", "<float>", "<int>", "<path>", "<list"):
            assert python_type not in row, row


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"], ["--version"]])
def test_help_and_version_probe_nothing(args: List[str]) -> None:
    run = fadoctor(*args, flags=("-X", "importtime"))
    assert run.code == 0
    imported = {line.split("|")[-1].strip() for line in run.err.splitlines()
                if line.startswith("import time:")}
    assert "fadoctor.cli.main" in imported  # the measurement worked
    # fadoctor.matrix itself is a lazy package (its cli registers `fadoctor matrix`); what
    # must not load is the matrix's models and loader.
    heavy = {"torch", "fadoctor.collect.run", "fadoctor.facts.model", "fadoctor.matrix.models",
             "fadoctor.matrix.load", "fadoctor.probes", "yaml", "pynvml", "elftools"}
    if args == ["--version"]:  # answered before the command line is built
        heavy |= {"typer", "rich", "pydantic", "fadoctor.cli.app"}
    if args == ["--help"]:
        heavy.add("pydantic")  # (typer itself imports pydantic to build a command's options)
    assert heavy.isdisjoint(imported)
    if args == ["--version"]:
        assert run.out.startswith("fadoctor ")
    else:
        assert "Usage:" in run.out and "check" in run.out
