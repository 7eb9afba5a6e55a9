"""The rank agent in the oldest interpreter it supports: Python 3.8, without torch — it still
runs the stages through fadoctor's runner and writes its record, with why it reached no store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest
from tests.helpers.broken import find_python

from fadoctor.distributed.collect import AGENT, read_facts_dir
from fadoctor.in_target import rank

PYTHON38 = find_python("3.8")


@pytest.mark.skipif(PYTHON38 is None, reason="needs a python3.8")
def test_the_agent_runs_on_python_38_and_says_why_it_reached_no_store(tmp_path: Path) -> None:
    assert PYTHON38 is not None
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29777")
    done = subprocess.run([PYTHON38, "-B", str(AGENT), "--out", str(tmp_path), "--stages",
                           "host,packages,files"], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "gathered.json").read_text())["ranks"][0]
    assert record["stages"]["host"]["data"]["python_version"].startswith("3.8.")
    assert record["store_error"] == "ModuleNotFoundError: No module named 'torch'"
    assert record["collective"]["failure"]["exception_type"] == "ModuleNotFoundError"
    job = read_facts_dir(tmp_path)  # and the parent reads it
    assert job.ranks[0].facts.host.data is not None and job.missing == []
    assert job.ranks[0].facts.torch.failure is not None  # not run: unknown, not absent


def test_an_agent_outside_a_launcher_says_so_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    done = subprocess.run([sys.executable, "-B", str(AGENT), "--out", str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("fadoctor rank agent: error: RANK and WORLD_SIZE are not set")
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("visible, local_rank, shown", [
    (None, 1, "1"), ("2,3", 1, "3"), ("GPU-a, GPU-b", 0, "GPU-a"), ("0", 1, None), ("", 0, None),
])
def test_the_kernel_tests_see_the_ranks_own_gpu_alone(visible: Optional[str], local_rank: int,
                                                       shown: Optional[str]) -> None:
    environ = {"PATH": "/bin"} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    env, why = rank.own_gpu(environ, local_rank)
    if shown is None:
        assert env is None and why.startswith(f"LOCAL_RANK {local_rank} has no GPU among")
    else:
        assert env is not None and env["CUDA_VISIBLE_DEVICES"] == shown and why == ""
