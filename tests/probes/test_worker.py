"""The worker, run as the runner runs it: a real child of a real interpreter, speaking JSON on --fd."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import pytest
from tests.helpers.broken import (
    environ_with_path,
    fake_module_dist,
    find_python,
    requires_torch,
    write_distribution,
)

from fadoctor.facts.model import Host, Packages
from fadoctor.probes.protocol import WORKER
from fadoctor.probes.runner import run_stages


def run_worker(stages: str, env: Optional[Mapping[str, str]] = None, python: str = sys.executable
               ) -> List[Dict[str, Any]]:
    """Run the target package by path, as the runner does (its token on stdin); the records it
    wrote to --fd, each after that token."""
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen([python, "-B", str(WORKER), "--fd", str(write_fd), "--stages", stages],
                            pass_fds=(write_fd,), stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(env) if env is not None else None)
    os.close(write_fd)
    assert proc.stdin is not None
    proc.stdin.write(b"t0ken\n")
    proc.stdin.close()
    with os.fdopen(read_fd, encoding="utf-8") as pipe:
        text = pipe.read()
    assert proc.wait(timeout=120) == 0
    lines = text.splitlines()
    assert all(line.startswith("t0ken {") for line in lines), lines
    return [json.loads(line.split(" ", 1)[1]) for line in lines]


def results(records: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    return {r["stage"]: r for r in records if r["event"] == "result"}


def test_protocol_is_start_result_per_stage_then_done() -> None:
    records = run_worker("host,packages")
    assert [(r["event"], r.get("stage")) for r in records] == [
        ("hello", None), ("start", "host"), ("result", "host"), ("start", "packages"),
        ("result", "packages"), ("done", None),
    ]
    assert records[0]["python"] == list(sys.version_info[:3])
    host = Host.model_validate(results(records)["host"]["data"])
    assert host.python_version == platform.python_version()
    assert host.python_implementation == platform.python_implementation()
    assert Path(host.python_executable) == Path(sys.executable)
    assert host.prefix == sys.prefix
    assert host.machine == platform.machine()


def test_an_unknown_stage_is_a_failed_result_and_the_next_stage_still_runs() -> None:
    by_stage = results(run_worker("nonsense,host"))
    failure = by_stage["nonsense"]["failure"]
    assert by_stage["nonsense"]["ok"] is False
    assert failure["kind"] == "error"
    assert failure["exception_type"] == "ValueError"
    assert "unknown stage 'nonsense'" in failure["reason"]
    assert by_stage["host"]["ok"] is True


def test_packages_lists_relevant_distributions_by_canonical_name(tmp_path: Path) -> None:
    write_distribution(tmp_path, "Flash_Attn.3", "3.0.0b1", {"flash_attn_interface.py": ""})
    write_distribution(tmp_path, "leftpad", "1.0", {"leftpad.py": ""})  # nothing fadoctor needs
    env = environ_with_path(tmp_path)
    env["FLASH_ATTENTION_FORCE_BUILD"] = "TRUE"
    by_stage = results(run_worker("host,packages", env=env))

    packages = Packages.model_validate(by_stage["packages"]["data"])
    fa3 = packages.get("flash-attn-3")
    assert fa3 is not None
    assert fa3.version == "3.0.0b1"
    assert Path(fa3.location or "") == tmp_path
    assert fa3.installer == "pip"
    assert fa3.top_level == ["flash_attn_interface"]
    assert packages.get("leftpad") is None
    # The environment variables that steer builds and CUDA are part of the host facts.
    host = Host.model_validate(by_stage["host"]["data"])
    assert host.environment["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE"
    assert host.environment["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)


@pytest.fixture(scope="module")
def family_records(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Dict[str, Any]]:
    """One worker imports two fake families: FA2 (needs the user's `packages` module) and a bare
    FA3 module with no distribution metadata."""
    site = tmp_path_factory.mktemp("site")
    # `packages` is also the name of a module in the worker's own folder: if that folder were on
    # sys.path, `from packages import USER_MARK` would find fadoctor's packages.py and fail.
    (site / "packages.py").write_text("USER_MARK = '2.6.3+user'\n")
    fake_module_dist(site, "flash-attn", "2.6.3", "flash_attn",
                     "from packages import USER_MARK as __version__\n")
    (site / "flash_attn_interface.py").write_text("__version__ = '3.0.0b1'\n")
    return results(run_worker("fa2,fa3", env=environ_with_path(site)))


@requires_torch
@pytest.mark.slow
def test_the_worker_folder_does_not_shadow_user_modules(
    family_records: Dict[str, Dict[str, Any]],
) -> None:
    assert (WORKER.parent / "packages.py").is_file()  # the name clash this test relies on
    fa2 = family_records["fa2"]["data"]
    assert fa2["installed"] is True
    assert fa2["import"]["ok"] is True, fa2["import"]
    assert fa2["import"]["data"]["version"] == "2.6.3+user"


@requires_torch
@pytest.mark.slow
def test_a_family_without_metadata_is_found_by_its_module(
    family_records: Dict[str, Dict[str, Any]],
) -> None:
    fa3 = family_records["fa3"]["data"]
    assert fa3["installed"] is True
    assert fa3["distribution"] is None and fa3["version"] is None
    imported = fa3["import"]["data"]
    assert imported["module"] == "flash_attn_interface"
    assert imported["version"] == "3.0.0b1"
    assert imported["extension"] is None


def test_a_family_that_needs_torch_is_skipped_without_it(tmp_path: Path) -> None:
    # A `torch` that fails to import stands in for a broken torch: the family is not blamed.
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise OSError('libtorch_cpu.so: cannot open "
                                                    "shared object file')\n")
    fake_module_dist(tmp_path, "flash-attn", "2.6.3", "flash_attn", "")
    by_stage = results(run_worker("torch,fa2", env=environ_with_path(tmp_path)))

    torch = by_stage["torch"]
    assert torch["ok"] is False
    assert torch["failure"]["kind"] == "import_error"
    assert "libtorch_cpu.so" in torch["failure"]["reason"]
    fa2 = by_stage["fa2"]["data"]
    assert fa2["installed"] is True and fa2["version"] == "2.6.3"
    assert fa2["import"]["failure"]["kind"] == "skipped"
    assert "needs torch" in fa2["import"]["failure"]["reason"]


# The worker claims Python 3.8+ (stdlib only, 3.8 syntax): run it on each one this machine has.
@pytest.mark.parametrize("minor", ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"])
def test_the_worker_runs_on_each_python(minor: str) -> None:
    python = find_python(minor)
    if python is None:
        pytest.skip(f"no working python{minor} on this machine")
    expected = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert expected.startswith(minor + ".")

    outcomes = run_stages(python, ["host", "packages"])
    assert outcomes["host"].ok, outcomes["host"].failure
    assert outcomes["packages"].ok, outcomes["packages"].failure
    host = Host.model_validate(outcomes["host"].data)
    assert host.python_version == expected
    assert host.python_abi_tag == "cp" + minor.replace(".", "")
    Packages.model_validate(outcomes["packages"].data)  # the record fits the facts model
