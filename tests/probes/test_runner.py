"""The runner survives what it diagnoses: crashes, aborts, exits and hangs become per-stage failures.

Each broken package is real and is imported by a real worker in this interpreter; the runner must
record the failure of that stage and carry on with a fresh worker past it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest
from tests.helpers.broken import (
    ABORT,
    HARD_EXIT,
    SEGFAULT,
    SYS_EXIT,
    environ_with_path,
    fake_module_dist,
    hang,
    process_gone,
    requires_torch,
)
from tests.helpers.spy import stages_of

from fadoctor.errors import TargetError
from fadoctor.facts.model import Host, Packages
from fadoctor.in_target.registry import names
from fadoctor.probes.runner import StageOutcome, run_stages

STAGES = tuple(names())

BEFORE_FA = ("host", "packages", "torch", "sdpa")


def assert_not_installed(results: Dict[str, StageOutcome], *stages: str) -> None:
    for stage in stages:
        assert results[stage].ok, results[stage].failure
        assert results[stage].data == {"installed": False}


def assert_ok(results: Dict[str, StageOutcome], *stages: str) -> None:
    for stage in stages:
        assert results[stage].ok, f"{stage}: {results[stage].failure}"


# -- the happy path -------------------------------------------------------------------------------


@requires_torch
def test_one_worker_runs_every_stage(worker_starts: List[List[str]]) -> None:
    progress: List[str] = []
    results = run_stages(sys.executable, STAGES, progress=progress.append)
    assert len(worker_starts) == 1
    assert stages_of(worker_starts[0]) == list(STAGES)
    assert progress == list(STAGES)
    assert list(results) == list(STAGES)
    assert_ok(results, *STAGES)
    host = Host.model_validate(results["host"].data)
    assert Path(host.python_executable) == Path(sys.executable)
    assert Packages.model_validate(results["packages"].data)
    assert all(results[s].seconds >= 0 for s in STAGES)


# -- the worker dies --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fa3_body_cases(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """One folder per way to die at import, each holding a fake FlashAttention-3."""
    folders = {}
    for case, body in {"segfault": SEGFAULT, "abort": ABORT, "exit": HARD_EXIT}.items():
        root = tmp_path_factory.mktemp(case)
        folders[case] = fake_module_dist(root, "flash_attn_3", "3.0.0b1", "flash_attn_interface", body)
    return folders


@requires_torch
@pytest.mark.slow
@pytest.mark.parametrize(("case", "kind", "signal", "exit_code", "marker"), [
    ("segfault", "crash", "SIGSEGV", -11, "Fatal Python error: Segmentation fault"),
    ("abort", "crash", "SIGABRT", -6, "Fatal Python error: Aborted"),
    ("exit", "exit", None, 3, None),
])
def test_a_stage_that_kills_the_worker_is_a_failure_and_the_rest_still_run(
    fa3_body_cases: Dict[str, Path], worker_starts: List[List[str]], case: str, kind: str,
    signal: str, exit_code: int, marker: str,
) -> None:
    results = run_stages(sys.executable, STAGES, env=environ_with_path(fa3_body_cases[case]))

    fa3 = results["fa3"]
    assert not fa3.ok and fa3.failure is not None
    assert fa3.failure.kind == kind
    assert fa3.failure.signal == signal
    assert fa3.failure.exit_code == exit_code
    assert "during stage fa3" in fa3.failure.reason
    if marker is not None:
        # faulthandler's report names the module whose import killed the interpreter.
        assert fa3.failure.stderr_tail is not None
        assert marker in fa3.failure.stderr_tail
        assert "flash_attn_interface.py" in fa3.failure.stderr_tail
    # Everything before it came from the first worker; a second one finished the job.
    assert_ok(results, *BEFORE_FA, "fa2")
    assert_not_installed(results, "fa2", "fa4", "vllm_fa")
    assert len(worker_starts) == 2
    assert stages_of(worker_starts[1]) == ["fa4", "vllm_fa", "transformers"]


@requires_torch
@pytest.mark.slow
def test_a_hanging_stage_is_killed_with_its_process_group(
    tmp_path: Path, worker_starts: List[List[str]]
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    fake_module_dist(tmp_path / "site", "flash-attn", "2.6.3", "flash_attn", hang(pid_file))
    started = time.monotonic()
    results = run_stages(sys.executable, STAGES, timeouts={"fa2": 3},
                         env=environ_with_path(tmp_path / "site"))
    elapsed = time.monotonic() - started

    fa2 = results["fa2"]
    assert not fa2.ok and fa2.failure is not None
    assert fa2.failure.kind == "timeout"
    assert "did not finish within 3 s" in fa2.failure.reason
    assert 3 <= fa2.seconds < 10
    # The hung import had started a grandchild; killing the session's group took it too.
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not process_gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_gone(grandchild)
    assert elapsed < 3 + 30  # not the 600 s the import would have slept
    assert_ok(results, *BEFORE_FA)
    assert_not_installed(results, "fa3", "fa4", "vllm_fa")
    assert len(worker_starts) == 2


@requires_torch
@pytest.mark.slow
def test_system_exit_and_noise_at_import_do_not_stop_the_worker(
    tmp_path: Path, worker_starts: List[List[str]]
) -> None:
    site = tmp_path / "site"
    # FA2 floods stdout (more than any pipe buffer) and imports fine; FA3 calls sys.exit(3).
    fake_module_dist(site, "flash-attn", "2.6.3", "flash_attn",
                     "import sys\nsys.stdout.write('x' * (1 << 20))\n__version__ = '2.6.3'\n")
    fake_module_dist(site, "flash_attn_3", "3.0.0b1", "flash_attn_interface", SYS_EXIT)
    results = run_stages(sys.executable, STAGES, env=environ_with_path(site))

    assert len(worker_starts) == 1  # SystemExit is caught like any import failure
    assert_ok(results, *STAGES)
    fa2 = results["fa2"].data
    assert fa2 is not None and fa2["import"]["ok"]
    assert fa2["import"]["data"]["version"] == "2.6.3"
    assert fa2["import"]["data"]["module"] == "flash_attn"
    fa3 = results["fa3"].data
    assert fa3 is not None
    assert fa3["installed"] is True and fa3["distribution"] == "flash-attn-3"
    failure = fa3["import"]["failure"]
    assert fa3["import"]["ok"] is False
    assert failure["kind"] == "import_error"
    assert failure["exception_type"] == "SystemExit"
    assert failure["reason"] == "3"
    assert "flash_attn_interface.py" in failure["traceback_tail"]
    assert_not_installed(results, "fa4", "vllm_fa")


# -- the interpreter itself is broken -------------------------------------------------------------


def test_a_missing_interpreter_is_a_target_error(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="no-python cannot be examined: cannot run it"):
        run_stages(str(tmp_path / "no-python"), ["host", "packages"])


def test_an_interpreter_that_dies_at_start_up_is_a_target_error_once(
    tmp_path: Path, worker_starts: List[List[str]]
) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'error while loading shared libraries: libpython3.so' >&2\n"
                      "exit 127\n")
    python.chmod(0o755)
    with pytest.raises(TargetError) as caught:
        run_stages(str(python), STAGES)
    assert len(worker_starts) == 1  # no restart loop for an interpreter that cannot start
    assert "exited with status 127 before answering fadoctor's handshake" in str(caught.value)
    assert "libpython3.so" in str(caught.value)


def test_an_interpreter_that_never_answers_is_killed_at_the_handshake(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 600\n")
    python.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(TargetError, match="did not answer fadoctor's handshake in time"):
        run_stages(str(python), ["host"], timeouts={"host": 1})
    assert time.monotonic() - started < 15
    assert process_gone(int(pid_file.read_text()))
