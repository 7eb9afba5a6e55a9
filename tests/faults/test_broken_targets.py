"""Broken targets, made for real: imported code that writes garbage or forged records on
fadoctor's channel, interpreters that cannot run the worker, undecodable metadata, a torch that
crashes inside a family's stage, grandchildren that hold the pipe or escape the process group,
extensions that are not ELF. No false diagnosis, no exit 3, no process left behind, and the
examined environment fingerprinted around every run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from tests.faults.conftest import (
    assert_error_line,
    base_environ,
    dist_info,
    examined,
    fadoctor,
    unchanged,
)
from tests.helpers.broken import (
    SEGFAULT,
    find_python,
    process_gone,
    requires_torch,
    target_ext_suffix,
)

pytestmark = [requires_torch, pytest.mark.slow]

META = b"Metadata-Version: 2.1\nName: %s\nVersion: %s\n"


def flash_attn(site: Path, body: str) -> None:
    dist_info(site, "flash_attn-2.6.3.dist-info", META % (b"flash-attn", b"2.6.3"),
              {"flash_attn/__init__.py": body.encode()})


def check_json(site: Path, *args: str, timeout: float = 300) -> Dict[str, Any]:
    with unchanged(*examined(site)):
        run = fadoctor("check", "--format", "json", *args, env=base_environ(PYTHONPATH=str(site)),
                       timeout=timeout)
    assert run.code == 1, run  # no GPU here: FAD101 fails; never 3
    report: Dict[str, Any] = json.loads(run.text)
    assert not [f for c in report["checks"] for f in c["findings"] if f["category"] == "internal"]
    return report


def check_of(report: Dict[str, Any], check_id: str) -> Dict[str, Any]:
    return next(c for c in report["checks"] if c["id"] == check_id)


def pids(folder: Path) -> List[int]:
    return [int(p.read_text()) for p in sorted(folder.glob("*.pid")) if p.read_text().strip()]


def wait_gone(pid_list: List[int], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not all(process_gone(p) for p in pid_list):
        time.sleep(0.1)
    assert all(process_gone(p) for p in pid_list), f"left running: {pid_list}"


def write_pid(folder: Path, name: str) -> str:
    return f"open({str(folder / (name + '.pid'))!r}, 'w').write(str(os.getpid()))\n"


# -- the protocol -------------------------------------------------------------------------------


FORGERIES = (
    "import json, os\n"
    "for fd in range(3, 64):\n"
    "    for line in (b'garbage\\n', b'{not json\\n', b'{\"event\": \"done\"}\\n',\n"
    "                 b'x {\"event\": \"result\", \"stage\": \"fa2\", \"ok\": true, \"data\": {}}\\n',\n"
    "                 b'\\xff\\xfe\\x1b]0;t\\x07\\n'):\n"
    "        try:\n"
    "            os.write(fd, line)\n"
    "        except OSError:\n"
    "            pass\n"
)


@pytest.mark.parametrize("then", ["crash", "carry-on"])
def test_garbage_and_forged_records_on_the_channel_are_the_targets_doing(tmp_path: Path,
                                                                        then: str) -> None:
    site = tmp_path / "site"
    body = "import os\n" + write_pid(tmp_path, "worker") + FORGERIES
    flash_attn(site, body + (SEGFAULT if then == "crash" else "__version__ = '2.6.3'\n"))
    report = check_json(site)
    fad111 = check_of(report, "FAD111")
    if then == "crash":
        assert fad111["status"] == "failed"
        assert "SIGSEGV" in fad111["findings"][0]["message"]
        assert "not the worker's records" in fad111["findings"][0]["evidence"]["stderr_tail"]
    else:
        assert fad111["status"] == "passed"
    wait_gone(pids(tmp_path))


def test_module_attributes_of_the_wrong_type_are_facts(tmp_path: Path) -> None:
    site = tmp_path / "site"
    flash_attn(site, "class V:\n    def __str__(self):\n        raise RuntimeError('no')\n"
                     "__version__ = V()\n__file__ = 42\n")
    report = check_json(site)
    assert check_of(report, "FAD111")["status"] == "passed"


# -- interpreters that cannot run the worker ---------------------------------------------------------


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("kind", ["python2.7", "python3.6", "python3.7", "false", "garbage",
                                  "sleeper", "not-executable-format"])
def test_an_interpreter_that_cannot_run_the_worker_is_exit_2_with_one_line(tmp_path: Path,
                                                                          kind: str) -> None:
    python: Optional[str]
    if kind.startswith("python"):
        python = find_python(kind[len("python"):])
        if python is None:
            pytest.skip(f"no {kind} here")
    elif kind == "false":
        python = "/bin/false"
    elif kind == "garbage":
        python = script(tmp_path, "python", "echo '{\"event\": \"hello\", \"python\": [3, 12]}'\n"
                        "for fd in /proc/$$/fd/*; do echo garbage > $fd; done 2>/dev/null\n")
    elif kind == "sleeper":
        python = script(tmp_path, "python", f"echo $$ > {tmp_path / 'sleeper.pid'}\nexec sleep 600\n")
    else:
        python = str(tmp_path / "python")
        Path(python).write_bytes(b"\x7fELF garbage")
        Path(python).chmod(0o755)
    started = time.monotonic()
    run = fadoctor("check", "--python", python, "--timeout", "3")
    assert_error_line(run, 2, "cannot be examined")
    assert run.out == b"" and time.monotonic() - started < 60
    wait_gone(pids(tmp_path))


def test_one_undecodable_metadata_is_recorded_for_that_distribution_alone(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist_info(site, "nvidia_bad-1.0.dist-info", META % (b"nvidia-bad", b"1.0") + b"Summary: caf\xe9\n")
    (site / "nvidia_dir-1.0.dist-info" / "METADATA").mkdir(parents=True)
    flash_attn(site, "__version__ = '2.6.3'\n")
    facts = tmp_path / "facts.json"
    with unchanged(*examined(site)):
        run = fadoctor("snapshot", "-o", str(facts), env=base_environ(PYTHONPATH=str(site)))
    assert run.code == 0, run
    packages = {d["name"]: d for d in json.loads(facts.read_text())["packages"]["data"][
        "distributions"]}
    assert packages["nvidia-bad"]["version"] == "1.0" and "UnicodeDecodeError" in packages[
        "nvidia-bad"]["error"]
    assert packages["nvidia-dir"]["error"] and packages["flash-attn"].get("error") is None
    report = json.loads(fadoctor("check", "--facts", str(facts), "--format", "json").text)
    fad111 = check_of(report, "FAD111")
    assert fad111["status"] == "passed"  # the other distributions, and the family, are intact
    assert [f["message"] for f in fad111["findings"]] == [
        "flash-attn 2.6.3: import flash_attn works"]


# -- blame ----------------------------------------------------------------------------------------


def test_torch_crashing_inside_a_family_stage_is_torchs_and_the_family_is_skipped(
        tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(SEGFAULT)  # shadows the real torch
    flash_attn(site, "import torch\n")
    report = check_json(site)
    fad102, fad111 = check_of(report, "FAD102"), check_of(report, "FAD111")
    assert fad102["status"] == "failed" and "SIGSEGV" in fad102["findings"][0]["message"]
    assert fad111["status"] == "skipped"
    assert "while importing torch" in fad111["skipped_reason"]


def test_an_extension_that_is_not_elf_is_skipped_never_passed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    flash_attn(site, "import flash_attn_2_cuda\n")
    (site / f"flash_attn_2_cuda{target_ext_suffix()}").write_bytes(b"#!/bin/sh\nnot an ELF file\n")
    with unchanged(*examined(site)):
        run = fadoctor("check", "--static", "--format", "json",
                       env=base_environ(PYTHONPATH=str(site)))
    report = json.loads(run.text)
    for check_id in ("FAD131", "FAD132"):
        result = check_of(report, check_id)
        assert result["status"] == "skipped", result
        assert "flash_attn_2_cuda could not be read" in result["skipped_reason"]


# -- no orphans -----------------------------------------------------------------------------------


def fork_and_hold(tmp_path: Path) -> str:
    """A grandchild that keeps every inherited descriptor (fadoctor's pipe too) and sleeps."""
    return ("import os, time\n"
            "if os.fork() == 0:\n"
            f"    open({str(tmp_path / 'grandchild.pid')!r}, 'w').write(str(os.getpid()))\n"
            "    time.sleep(600)\n"
            "    os._exit(0)\n"
            "time.sleep(0.5)\n")


def test_a_grandchild_holding_the_pipe_does_not_turn_a_crash_into_a_hang(tmp_path: Path) -> None:
    site = tmp_path / "site"
    flash_attn(site, "import os\n" + write_pid(tmp_path, "worker") + fork_and_hold(tmp_path)
               + SEGFAULT)
    started = time.monotonic()
    report = check_json(site, "--timeout", "60")
    assert time.monotonic() - started < 50  # not the 60 s timeout
    fad111 = check_of(report, "FAD111")
    assert "SIGSEGV" in fad111["findings"][0]["message"]
    wait_gone(pids(tmp_path))


def hanging_target(tmp_path: Path) -> Path:
    """flash-attn whose import starts a grandchild that leaves the session (setsid), then hangs."""
    escapee = (f"import os, time; os.setsid(); open({str(tmp_path / 'escapee.pid')!r}, 'w')"
               ".write(str(os.getpid())); time.sleep(600)")
    site = tmp_path / "site"
    flash_attn(site, "import os, subprocess, sys, time\n" + write_pid(tmp_path, "worker")
               + f"subprocess.Popen([sys.executable, '-c', {escapee!r}])\ntime.sleep(600)\n")
    return site


def test_a_timeout_kills_the_whole_tree_even_what_left_the_session(tmp_path: Path) -> None:
    site = hanging_target(tmp_path)
    report = check_json(site, "--timeout", "30")  # (importing torch on a loaded machine: < 30 s)
    assert "did not finish within 30 s" in check_of(report, "FAD111")["findings"][0]["message"]
    assert len(pids(tmp_path)) == 2  # the worker, and the grandchild that called setsid
    wait_gone(pids(tmp_path))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_fadoctor_leaves_no_process_behind(tmp_path: Path, sig: int) -> None:
    site = hanging_target(tmp_path)
    # SIGINT as a terminal sends it, whatever this test inherited: a shell's background job
    # starts with SIGINT ignored, and Python then keeps it ignored.
    proc = subprocess.Popen([sys.executable, "-m", "fadoctor", "check"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=base_environ(PYTHONPATH=str(site)),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while len(pids(tmp_path)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(pids(tmp_path)) == 2, "the worker never reached the hanging import"
    time.sleep(0.5)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.decode().splitlines() == ["fadoctor: interrupted"]
    wait_gone(pids(tmp_path))
