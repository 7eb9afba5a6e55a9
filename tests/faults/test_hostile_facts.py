"""Every recorded or reproduced facts file, with every distribution's name and version — the
target's metadata — replaced by shell syntax: no remedy of any check, with any GPU's facts,
lets such a value into a command; those remedies say why instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import pytest
from tests.faults.conftest import assert_harmless, leaves_a_trace

from fadoctor.errors import InputError
from fadoctor.evaluate import evaluate
from fadoctor.facts.files import loads
from fadoctor.matrix import load_matrix
from fadoctor.safety.shell import command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FILES = sorted([*(FIXTURES / "facts").glob("*.json"), *(FIXTURES / "recorded").glob("h200-*.json")])
HOSTILE_NAME = "x; touch pwned"
HOSTILE_VERSION = '1.0" touch "pwned'
MATRIX = load_matrix()


def poison(node: Any) -> Any:
    """The same document, each distribution's name and version (and each family's
    `distribution`/`version`) made hostile."""
    if isinstance(node, list):
        return [poison(v) for v in node]
    if not isinstance(node, dict):
        return node
    is_distribution = "name" in node and "version" in node and "location" in node
    out = {}
    for key, value in node.items():
        if is_distribution and key == "name":
            out[key] = HOSTILE_NAME
        elif (is_distribution or "family" in node) and key == "version" and isinstance(value, str):
            out[key] = HOSTILE_VERSION
        elif "family" in node and key == "distribution" and isinstance(value, str):
            out[key] = HOSTILE_NAME
        else:
            out[key] = poison(value)
    return out


def test_there_are_facts_to_poison() -> None:
    assert len(FILES) >= 13


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_hostile_metadata_never_reaches_a_command(path: Path, tmp_path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not {"schema_version", "host", "packages"} <= set(raw):
        pytest.skip("not a facts file (a recorded benchmark)")
    try:
        facts = loads(json.dumps(poison(raw)), path.name)
    except InputError as exc:  # pragma: no cover - a refused file has no commands at all
        pytest.fail(f"poisoned facts refused: {exc}")
    report = evaluate(facts, MATRIX)
    commands: List[str] = [c for f in report.findings() for r in f.remedies for c in r.commands]
    assert not [c for c in commands if "pwned" in c], commands
    assert_harmless(commands, tmp_path / "box")  # a real shell runs nothing they hold
    held_back = [r.summary for f in report.findings() for r in f.remedies
                 if "No command is shown" in r.summary]
    assert all("pwned" in s for s in held_back)


@pytest.mark.parametrize("value", [HOSTILE_NAME, "$(touch pwned)", "`touch pwned`"])
def test_the_shell_sandbox_sees_what_a_hostile_value_would_run(value: str, tmp_path: Path) -> None:
    """The check above has teeth: pasted into a command as it stands, each hostile value runs
    `touch` in the sandbox; through fadoctor.safety.shell, it stays one inert word. (HOSTILE_VERSION
    runs nothing: it adds pip arguments, which the "pwned" test above catches.)"""
    assert leaves_a_trace(f"pip install flash-attn=={value}", tmp_path / "raw")
    assert not leaves_a_trace(command("pip", "install", value), tmp_path / "quoted")
