"""The GitHub workflows: each one is YAML GitHub can load, and the compat-matrix workflow's glue
holds: its default combinations are the documented keys, and the step that runs one passes
tools/compat_job.py options it accepts (its bash run for real, for a CPU and a GPU runner)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
KEYS = {"python", "torch", "variant", "family", "version", "extra", "runner", "gpu"}

sys.path.insert(0, str(ROOT / "tools"))
import compat_job  # noqa: E402  (a script of tools/, imported for its option parser)


def load(path: Path) -> Dict[Any, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_each_workflow_is_yaml_with_triggers_and_jobs(path: Path) -> None:
    data = load(path)
    assert (data.get("on") or data.get(True)) and data.get("jobs"), path.name  # YAML 1.1: on is True


def compat() -> Dict[Any, Any]:
    return load(ROOT / ".github" / "workflows" / "compat-matrix.yml")


def test_compat_matrix_is_reusable_and_merges_last() -> None:
    data = compat()
    triggers = data.get("on") or data[True]
    assert {"workflow_call", "workflow_dispatch"} <= set(triggers)
    assert "matrix" in triggers["workflow_call"]["inputs"]
    jobs = data["jobs"]
    assert jobs["combination"]["needs"] == "plan" and jobs["merge"]["needs"] == "combination"
    merge = " ".join(step.get("run", "") for step in jobs["merge"]["steps"])
    assert "fadoctor compat merge" in merge and "fadoctor compat show" in merge


def test_the_default_combinations_are_json_with_the_documented_keys() -> None:
    script = compat()["jobs"]["plan"]["steps"][0]["run"]
    text = re.search(r"<<'JSON'\n(.*?)\n\s*JSON\n", script, re.S)
    assert text is not None
    combinations: List[Dict[str, Any]] = json.loads(text.group(1))
    assert combinations and all(set(c) <= KEYS and {"python", "torch", "runner"} <= set(c)
                                for c in combinations)


@pytest.mark.parametrize("combination", [
    {"TORCH": "2.13.0", "VARIANT": "cpu", "FAMILY": "fa4", "VERSION": "4.0.0b36",
     "EXTRA": "torchvision==0.29.1", "RUNNER_LABEL": "ubuntu-latest", "GPU": "false"},
    {"TORCH": "2.11.0", "VARIANT": "cu130", "FAMILY": "", "VERSION": "", "EXTRA": "",
     "RUNNER_LABEL": "gpu-h100", "GPU": "true"},
])
def test_the_step_that_runs_a_combination_passes_options_the_job_accepts(
        tmp_path: Path, combination: Dict[str, str]) -> None:
    [step] = [s for s in compat()["jobs"]["combination"]["steps"]
              if "compat_job.py" in s.get("run", "")]
    python = tmp_path / "fadoctor" / "bin" / "python"  # stands for fadoctor's own venv
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\nshift\nprintf "%s\\n" "$@" > "$RUNNER_TEMP/args"\n')
    python.chmod(0o755)
    done = subprocess.run(["bash", "-e", "-c", step["run"]], capture_output=True, text=True,
                          env={**os.environ, **combination, "RUNNER_TEMP": str(tmp_path)},
                          check=False)
    assert done.returncode == 0, done.stderr
    argv = (tmp_path / "args").read_text().splitlines()
    args = compat_job.arguments().parse_args(argv)  # exits (fails the test) on an unknown option
    assert args.torch == combination["TORCH"] and args.runner == combination["RUNNER_LABEL"]
    assert args.static == (combination["GPU"] != "true")
    assert (args.family or "") == combination["FAMILY"] and args.extra == (
        [combination["EXTRA"]] if combination["EXTRA"] else [])
