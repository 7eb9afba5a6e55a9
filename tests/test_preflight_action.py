"""The preflight action as a runner runs it: action.yml parsed, each `run:` step executed by bash
(`bash --noprofile --norc -eo pipefail`, GitHub's `shell: bash`) in a temporary runner-like
environment (RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_ACTIONS=true), against this
interpreter and its real CPU torch."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

import pytest
import yaml
from tests.helpers.broken import requires_torch

from fadoctor import __version__

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / ".github" / "actions" / "preflight"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


class Step(NamedTuple):
    id: str
    code: int
    out: str
    outputs: Dict[str, str]


class Runner:
    """Runs the composite action's steps in order, as the runner would, with these inputs."""

    def __init__(self, tmp: Path, inputs: Dict[str, str], env: Optional[Dict[str, str]] = None):
        self.action = yaml.safe_load((ACTION / "action.yml").read_text(encoding="utf-8"))
        self.inputs = {name: str(spec.get("default", "")) for name, spec in
                       self.action["inputs"].items()}
        unknown = set(inputs) - set(self.inputs)
        assert not unknown, f"not inputs of the action: {unknown}"
        self.inputs.update(inputs)
        self.tmp = tmp
        (tmp / "runner-temp").mkdir()
        self.summary = tmp / "step-summary.md"
        self.summary.touch()
        base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
        self.env = {**base, "RUNNER_TEMP": str(tmp / "runner-temp"), "GITHUB_ACTIONS": "true",
                    "GITHUB_STEP_SUMMARY": str(self.summary), "GITHUB_ACTION_PATH": str(ACTION),
                    **(env or {})}
        self.outputs: Dict[str, Dict[str, str]] = {}

    def value(self, expression: str) -> str:
        if expression == "github.action_path":
            return str(ACTION)
        scope, _, rest = expression.partition(".")
        if scope == "inputs":
            return self.inputs[rest]
        if scope == "steps":
            step, _, name = rest.partition(".outputs.")
            return self.outputs.get(step, {}).get(name, "")
        raise AssertionError(f"expression the test runner does not know: {expression}")

    def run(self, only: Optional[str] = None) -> List[Step]:
        done = []
        for number, step in enumerate(self.action["runs"]["steps"]):
            if only is not None and step.get("id") != only:
                continue
            assert step["shell"] == "bash"
            output = self.tmp / f"output-{number}"
            output.touch()
            env = {**self.env, "GITHUB_OUTPUT": str(output),
                   **{k: EXPRESSION.sub(lambda m: self.value(m.group(1)), str(v))
                      for k, v in step.get("env", {}).items()}}
            script = self.tmp / f"step-{number}.sh"
            script.write_text(step["run"], encoding="utf-8")
            ran = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                                 env=env, cwd=self.tmp, capture_output=True, text=True,
                                 timeout=600, check=False)
            outputs = dict(line.split("=", 1) for line in
                           output.read_text(encoding="utf-8").splitlines() if "=" in line)
            self.outputs[step.get("id", str(number))] = outputs
            done.append(Step(step.get("id", str(number)), ran.returncode,
                             ran.stdout + ran.stderr, outputs))
            if ran.returncode != 0:
                break
        return done


def installed_fadoctor() -> str:
    """The fadoctor installed beside this interpreter (the action's `fadoctor` input)."""
    return str(Path(sys.executable).parent / "fadoctor")


def test_inputs_never_reach_bash_as_text() -> None:
    """Every `${{ }}` sits in an `env:` value; no `run:` script holds one."""
    action = yaml.safe_load((ACTION / "action.yml").read_text(encoding="utf-8"))
    for step in action["runs"]["steps"]:
        assert "${{" not in step["run"], step.get("name")


@pytest.mark.slow
@requires_torch  # the workflow's check examines this interpreter's torch
def test_a_workflow_using_the_action_as_published(tmp_path: Path) -> None:
    """`uses: <owner>/fadoctor/.github/actions/preflight@<ref>` with only `python:` set: the
    action installs the fadoctor of its own checkout (no package index has one), probes this
    interpreter (real CPU torch), and reports three ways."""
    runner = Runner(tmp_path, {"python": sys.executable})
    install, check = runner.run()
    assert install.code == 0, install.out
    assert f"fadoctor {__version__}" in install.out
    fad = Path(install.outputs["fadoctor"])
    assert fad.parent.parent == tmp_path / "runner-temp" / "fadoctor-venv"
    dist = next((fad.parent.parent / "lib").glob("python3*/site-packages/fadoctor-*.dist-info"))
    url = json.loads((dist / "direct_url.json").read_text(encoding="utf-8"))["url"]
    assert Path(url.removeprefix("file://")).resolve() == ROOT
    report = json.loads(Path(check.outputs["report"]).read_text(encoding="utf-8"))
    assert report["target"]["python"] == sys.executable
    torch = next(c for c in report["checks"] if c["id"] == "FAD102")
    assert torch["status"] == "passed", torch  # the real CPU torch imported in the target
    worst = report["summary"]["worst"]
    assert check.code == (1 if worst == "error" else 0), check.out
    assert runner.summary.read_text(encoding="utf-8").startswith("## fadoctor:")
    if worst == "error":
        assert "::error" in check.out


def test_inputs_are_data_not_shell(tmp_path: Path) -> None:
    """Command substitution, backquotes and `;` in every input stay text: the already installed
    fadoctor (the `fadoctor` input) gets them as arguments and refuses the interpreter path."""
    hostile = "$(touch pwned-subst) `touch pwned-tick`; touch pwned-semi"
    runner = Runner(tmp_path, {"python": hostile, "args": hostile, "fail-on": hostile,
                               "fadoctor": installed_fadoctor()})
    steps = runner.run()
    assert steps[-1].code == 2, steps[-1].out  # fadoctor: error: ... (not an interpreter)
    assert "fadoctor: error:" in steps[-1].out
    assert not list(tmp_path.glob("pwned*"))
