"""The exit-code contract for every input: bad usage and bad files are exit 2 with exactly one
inert `fadoctor: error:` line on stderr and nothing on stdout — click's own errors, numbers that
overflow, versions that do not parse, files that are not UTF-8, facts whose numbers do not parse,
a matrix of a schema this fadoctor does not know."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
from tests.faults.conftest import assert_error_line, fadoctor

from fadoctor.matrix.load import default_matrix_path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "facts" / "t4-fa2-installed.json"


@pytest.mark.parametrize(("args", "words"), [
    (["check", "--bogus"], ["No such option: --bogus"]),
    (["check", "--format", "xml"], ["--format"]),
    (["check", "--ignore"], ["requires an argument"]),
    (["check", "--fail-on", "sometimes"], ["--fail-on"]),
    (["nonsense"], ["No such command"]),
    (["matrix", "show", "--format", "yaml"], ["--format"]),
    (["check", "--timeout", "inf"], ["--timeout", "inf"]),
    (["check", "--timeout", "1e308"], ["--timeout"]),
    (["snapshot", "-o", "-", "--timeout", "nan"], ["--timeout", "nan"]),
    (["check", "--timeout", "0"], ["--timeout"]),
    (["check", "--timeout", "banana"], ["--timeout"]),
    (["fix", "--no-detect", "--flash-attn", "banana"], ["--flash-attn", "banana is not a version"]),
    (["fix", "--no-detect", "--torch", "2.4.0;rm"], ["--torch"]),
    (["fix", "--no-detect", "--gpu-cc", "1e308"], ["--gpu-cc"]),
    (["matrix", "show", "--flash-attn", "banana"], ["--flash-attn"]),
    (["explain", "FAD999"], ["FAD999"]),
    (["check", "--facts", "/nonexistent/\x1b[31mred"], ["cannot read facts file", "\\x1b[31mred"]),
])
def test_bad_usage_is_one_line_and_exit_2(args: List[str], words: List[str]) -> None:
    run = fadoctor(*args)
    assert_error_line(run, 2, *words)
    assert run.out == b""


def latin1(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("latin-1"))
    return path


def test_latin1_facts_and_matrix_files_are_bad_input(tmp_path: Path) -> None:
    facts = latin1(tmp_path / "facts.json", FIXTURE.read_text(encoding="utf-8").replace(
        "Tesla T4", "Tesla T4 café"))
    assert_error_line(fadoctor("check", "--facts", str(facts)), 2, "is not UTF-8 text",
                      "byte 0xe9")
    matrix = latin1(tmp_path / "matrix.yaml", default_matrix_path().read_text(encoding="utf-8")
                    + "# café\n")
    for args in (["matrix", "lint"], ["matrix", "show", "--gpu", "9.0"],
                 ["check", "--facts", str(FIXTURE)], ["fix", "--no-detect", "--gpu-cc", "9.0"]):
        assert_error_line(fadoctor(*args, "--matrix", str(matrix)), 2, "is not UTF-8 text")


def edit(raw: Dict[str, Any], where: str, value: object) -> Dict[str, Any]:
    node: Any = raw
    *path, last = where.split(".")
    for step in path:
        node = node[int(step) if step.isdigit() else step]
    node[last] = value
    return raw


@pytest.mark.parametrize(("where", "value"), [
    ("driver.data.gpus.0.compute_capability", "banana"),
    ("driver.data.gpus.0.compute_capability", "9"),
    ("torch.data.devices.0.capability", "sm_90"),
    ("torch.data.cuda", "twelve"),
    ("driver.data.version", "570.172.08; rm -rf ~"),
    ("driver.data.cuda_version", "1e308"),
])
def test_facts_whose_numbers_do_not_parse_are_refused_at_load(tmp_path: Path, where: str,
                                                              value: str) -> None:
    raw = edit(json.loads(FIXTURE.read_text(encoding="utf-8")), where, value)
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    assert_error_line(fadoctor("check", "--facts", str(path)), 2, f"is invalid: {where}: ")


@pytest.mark.parametrize("text", ["{not json", "[1, 2", "NaN", '{"a": Infinity}', "[" * 100_000,
                                  "1" * 5000, ""])
def test_facts_that_are_not_json_are_bad_input(tmp_path: Path, text: str) -> None:
    path = tmp_path / "facts.json"
    path.write_text(text, encoding="utf-8")
    assert_error_line(fadoctor("check", "--facts", str(path)), 2, "facts file")


def test_a_matrix_of_an_unknown_schema_version_is_refused_also_by_lint(tmp_path: Path) -> None:
    text = default_matrix_path().read_text(encoding="utf-8")
    assert "\nschema_version: 1\n" in text
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(text.replace("\nschema_version: 1\n", "\nschema_version: 2\n"),
                      encoding="utf-8")
    lint = fadoctor("matrix", "lint", "--matrix", str(matrix))
    assert lint.code == 2 and b"schema_version 2 is not 1" in lint.out
    assert_error_line(fadoctor("check", "--facts", str(FIXTURE), "--matrix", str(matrix)), 2,
                      "schema_version 2 is not 1")


def test_undecodable_bytes_in_a_path_come_through_escaped(tmp_path: Path) -> None:
    path = tmp_path / os.fsdecode(b"facts-\xff\xfe.json")
    run = fadoctor("check", "--facts", str(path))
    assert_error_line(run, 2, "facts-\\xff\\xfe.json")


WRONG: Dict[str, Callable[[Dict[str, Any]], Any]] = {
    "schema_version": lambda raw: edit(raw, "schema_version", 99),
    "gpus not a list": lambda raw: edit(raw, "driver.data.gpus", "A100"),
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_schema_violations_are_one_line(tmp_path: Path, case: str) -> None:
    raw = WRONG[case](json.loads(FIXTURE.read_text(encoding="utf-8")))
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    assert_error_line(fadoctor("check", "--facts", str(path)), 2, "is invalid")
