"""The distributed commands as users run them: real `python -m fadoctor` processes on folders the
rank agents write (recorded from a real run), their output and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, NamedTuple

import pytest
from tests.helpers.jobs import raw_job

LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                      "SLURM_PROCID", "SLURM_NTASKS")


class Run(NamedTuple):
    code: int
    out: str
    err: str


def fadoctor(*args: str) -> Run:
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", *LAUNCHER_VARIABLES)}
    done = subprocess.run([sys.executable, "-m", "fadoctor", *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


def usage_error(run: Run, *words: str) -> None:
    assert run.code == 2, run
    assert run.out == "" and len(run.err.splitlines()) == 1, run.err
    assert run.err.startswith("fadoctor: error: ") and "Traceback" not in run.err
    for word in words:
        assert word in run.err, run.err


def write(folder: Path, name: str, data: Dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def facts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("job"), "gathered.json", raw_job(4, 2))


def test_rank_script_prints_the_agent() -> None:
    run = fadoctor("rank-script")
    assert run.code == 0 and run.err == ""
    path = Path(run.out.strip())
    assert path.is_file() and path.name == "rank_agent.py"
    assert path.read_text().startswith('"""Entry point of the rank agent')


def test_distributed_outside_a_launcher_is_a_usage_error() -> None:
    usage_error(fadoctor("check", "--distributed"), "--distributed: RANK and WORLD_SIZE are not set")
    usage_error(fadoctor("check", "--distributed", "--static"), "--static")


def test_bad_facts_folders_are_usage_errors(tmp_path: Path) -> None:
    usage_error(fadoctor("check", "--facts-dir", str(tmp_path / "nope")), "no such folder")
    usage_error(fadoctor("check", "--facts-dir", str(tmp_path)), "neither gathered.json")
    write(tmp_path, "gathered.json", {"format": "fadoctor-gather/1", "world_size": 2,
                                      "ranks": [{"format": "fadoctor-rank/1"}]})
    usage_error(fadoctor("check", "--facts-dir", str(tmp_path)), "the record of rank ?",
                "malformed")


def test_check_facts_dir_reports_the_job(facts_dir: Path) -> None:
    run = fadoctor("check", "--facts-dir", str(facts_dir))
    assert run.code == 1, run.err  # a CPU job: no driver, a CPU torch
    lines = run.out.splitlines()
    assert lines[0].startswith("fadoctor: problems found")
    assert lines[1] == ("  job        4 of 4 ranks reported, from 2 node(s): node 0 (node-0): "
                        "ranks 0-1; node 1 (node-1): ranks 2-3")
    assert "✓ FAD201 ranks-reported          all 4 ranks reported, from 2 node(s)" in lines
    suite = ET.fromstring(fadoctor("check", "--facts-dir", str(facts_dir), "-f", "junit").out)
    assert "FAD206" in [c.get("name") for c in suite.iter("testcase")]


def test_ignore_takes_job_checks(facts_dir: Path) -> None:
    run = fadoctor("check", "--facts-dir", str(facts_dir), "-f", "json", "--ignore",
                   "same-environment")
    assert "FAD204" not in [c["id"] for c in json.loads(run.out)["merged"]["checks"]]
    usage_error(fadoctor("check", "--facts-dir", str(facts_dir), "--ignore", "FAD299"), "FAD299")
    assert "FAD205 gpu-per-rank" in fadoctor("explain", "FAD205").out
    assert "FAD207  nccl-collectives" in fadoctor("explain").out


def test_snapshot_of_a_folder_is_checked_like_the_folder(facts_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    assert fadoctor("snapshot", "--facts-dir", str(facts_dir), "-o", str(path)).code == 0
    assert json.loads(path.read_text())["kind"] == "distributed"
    from_file = fadoctor("check", "--facts", str(path), "-f", "json")
    from_dir = fadoctor("check", "--facts-dir", str(facts_dir), "-f", "json")
    assert from_file.code == from_dir.code == 1
    assert json.loads(from_file.out)["merged"] == json.loads(from_dir.out)["merged"]


def test_a_folder_without_rank_0s_gather_names_the_ranks_without_a_record(tmp_path: Path) -> None:
    raw = raw_job(3, 3)
    for record in (raw["ranks"][0], raw["ranks"][2]):
        write(tmp_path, f"rank-{record['identity']['rank']:05d}.json", record)
    run = fadoctor("check", "--facts-dir", str(tmp_path), "-f", "json")
    reported = next(c for c in json.loads(run.out)["merged"]["checks"] if c["id"] == "FAD201")
    assert reported["findings"][0]["message"] == "rank 1 left no record in the facts folder"


def test_a_rank_rank_0_gave_up_on_is_read_from_its_own_record(tmp_path: Path) -> None:
    raw = raw_job(3, 3)
    late = raw["ranks"].pop(2)  # rank 2 wrote its record (a shared folder) but never delivered
    raw["missing"] = [{"rank": 2, "state": "lost", "identity": late["identity"],
                       "silent_s": 20.5, "waited_s": 60.0}]
    write(tmp_path, "gathered.json", raw)
    write(tmp_path, "rank-00002.json", late)
    report = json.loads(fadoctor("check", "--facts-dir", str(tmp_path), "-f", "json").out)
    assert [r["rank"] for r in report["ranks"]] == [0, 1, 2]
    reported = next(c for c in report["merged"]["checks"] if c["id"] == "FAD201")
    assert reported["findings"][0]["message"].endswith(
        "; the own record of rank 2 was found in the facts folder")
