"""Facts files fuzzed with hypothesis: each recorded fixture with a few values replaced by ones the
schema accepts but that mean nothing (versions that do not parse, hostile text, undecodable bytes,
huge or negative numbers, duplicated entries). A file is either refused at load (exit 2, one
line) or diagnosed with no check crashing, every format inert and every command safe."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, List, Tuple, Union

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tests.faults.conftest import assert_inert

from fadoctor.errors import InputError
from fadoctor.evaluate import evaluate
from fadoctor.facts.files import loads
from fadoctor.formats import Format
from fadoctor.matrix import load_matrix
from fadoctor.render.dispatch import render
from fadoctor.report import Category, Severity
from fadoctor.safety.shell import is_safe

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "facts").glob("*.json"))
MATRIX = load_matrix()
Path_ = Tuple[Union[str, int], ...]

NONSENSE = ["", "banana", "9.x", "1e308", "-1", "0", "0.0", "nan", "inf", "13.0.0.0.0", "v2",
            '2.5.5"; touch pwned', "nvidia-x; rm -rf ~", "$(id)", "\x1b]0;t\x07\x1b[2J",
            "</details><img src=x>", "caf\udce9", "\udcff\udcfe", "a\nb\r\n::error::x",
            "sm_90", "90", "9.0a", "12.8", "2.6.0+cu124", "x" * 5000]
strings = st.one_of(st.sampled_from(NONSENSE), st.text(max_size=40),
                    st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,4}){0,3}[a-z+]{0,2}", fullmatch=True))
numbers = st.one_of(st.sampled_from([-1, 0, 1, 2**31, 2**63, -(2**63)]), st.integers())


def leaves(node: Any, path: Path_ = ()) -> List[Path_]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in leaves(v, (*path, k))]
    if isinstance(node, list):
        return [path] + [p for i, v in enumerate(node) for p in leaves(v, (*path, i))]
    return [path]


def at(node: Any, path: Path_) -> Any:
    for step in path:
        node = node[step]
    return node


@st.composite
def mutated_facts(draw: st.DrawFn) -> str:
    raw = json.loads(draw(st.sampled_from(FIXTURES)).read_text(encoding="utf-8"))
    spots = leaves(raw)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(spots))
        if not path:
            continue
        parent, old = at(raw, path[:-1]), at(raw, path)
        if isinstance(old, list):
            new: Any = draw(st.sampled_from([[], old + old[:1], old[::-1]]))
        elif isinstance(old, bool):
            new = not old
        elif isinstance(old, int):
            new = draw(numbers)
        elif isinstance(old, float):
            new = draw(st.floats(allow_nan=False, allow_infinity=False))
        else:  # a string, or null
            new = draw(st.one_of(strings, st.none()))
        parent[path[-1]] = new
        spots = leaves(raw)
    return json.dumps(raw)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_facts())
def test_fuzzed_facts_are_refused_or_diagnosed_safely(text: str) -> None:
    try:
        facts = loads(text, "facts file")
    except (ValidationError, InputError):
        event("refused at load")
        return  # bad input: the CLI says so in one line, exit 2 (tests/faults/test_bad_input.py)
    event("diagnosed")
    report = evaluate(facts, MATRIX)
    crashed = [f.message for f in report.findings()
               if f.category == Category.INTERNAL and f.severity == Severity.ERROR
               and f.message.startswith("the check itself failed")]
    assert not crashed, crashed
    for fmt in Format:
        out = render(report, fmt)
        assert_inert(out)
        out.encode("utf-8")
        if fmt == Format.JUNIT:
            ET.fromstring(out.encode("utf-8"))
    for finding in report.findings():
        for remedy in finding.remedies:
            assert all(is_safe(c) for c in remedy.commands)
            # A value that fails validation never reaches a command, not even quoted.
            assert not any("pwned" in c or "rm -rf" in c for c in remedy.commands), remedy
