"""The checked-in JSON Schemas: regenerated from the models, and the JSON output keeps to them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Type

import pytest
from pydantic import BaseModel

from fadoctor.distributed.models import JobFacts
from fadoctor.distributed.report import JobReport
from fadoctor.facts.model import Facts
from fadoctor.formats import Format
from fadoctor.render.dispatch import render
from fadoctor.report import Report

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS: Dict[str, Type[BaseModel]] = {"report.schema.json": Report, "facts.schema.json": Facts,
                                       "job-report.schema.json": JobReport,
                                       "job-facts.schema.json": JobFacts}
FACTS_DIR = ROOT / "tests" / "fixtures" / "facts"
NAMES = sorted(p.stem for p in FACTS_DIR.glob("*.json"))
Json = Any


def schema_text(model: Type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"


@pytest.mark.skipif(sys.version_info < (3, 10), reason="on Python 3.9 typing spells generic "
                    "titles with module paths (Probe[List[fadoctor.facts.model.BinaryAnalysis]])")
@pytest.mark.parametrize("filename", sorted(SCHEMAS))
def test_checked_in_schema_is_current(filename: str,
                                      compare_or_update: Callable[[Path, str], None]) -> None:
    compare_or_update(ROOT / "schemas" / filename, schema_text(SCHEMAS[filename]))


def violations(value: Json, node: Json, defs: Dict[str, Json], where: str = "$") -> List[str]:
    """Where `value` leaves the schema: the subset pydantic emits (refs, anyOf, enums, types)."""
    if "$ref" in node:
        return violations(value, defs[node["$ref"].split("/")[-1]], defs, where)
    if "anyOf" in node:
        tried = [violations(value, option, defs, where) for option in node["anyOf"]]
        return [] if any(not t for t in tried) else min(tried, key=len)
    if "enum" in node and value not in node["enum"]:
        return [f"{where}: {value!r} is not one of {node['enum']}"]
    kind = node.get("type")
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
             "integer": int, "number": (int, float)}
    if kind is not None and (not isinstance(value, types[kind])
                             or (kind in ("integer", "number") and isinstance(value, bool))):
        return [f"{where}: {type(value).__name__} where the schema says {kind}"]
    out: List[str] = []
    if kind == "object":
        props = node.get("properties", {})
        out += [f"{where}: missing {key}" for key in node.get("required", []) if key not in value]
        for key, item in value.items():
            if key in props:
                out += violations(item, props[key], defs, f"{where}.{key}")
            elif node.get("additionalProperties") is False:
                out.append(f"{where}: {key} is not in the schema")
            elif isinstance(node.get("additionalProperties"), dict):
                out += violations(item, node["additionalProperties"], defs, f"{where}.{key}")
    if kind == "array" and "items" in node:
        for i, item in enumerate(value):
            out += violations(item, node["items"], defs, f"{where}[{i}]")
    return out


def checked_in(filename: str) -> Json:
    return json.loads((ROOT / "schemas" / filename).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", NAMES)
def test_json_output_keeps_to_the_report_schema(name: str,
                                                report_of: Callable[[str], Report]) -> None:
    schema = checked_in("report.schema.json")
    data = json.loads(render(report_of(name), Format.JSON))
    assert violations(data, schema, schema["$defs"]) == []


@pytest.mark.parametrize("name", NAMES)
def test_facts_fixtures_keep_to_the_facts_schema(name: str) -> None:
    schema = checked_in("facts.schema.json")
    data = json.loads((FACTS_DIR / f"{name}.json").read_text(encoding="utf-8"))
    assert violations(data, schema, schema["$defs"]) == []


def test_job_json_keeps_to_the_job_schemas() -> None:
    from tests.helpers.jobs import job

    from fadoctor.distributed.evaluate import evaluate_job
    from fadoctor.distributed.render import render_job
    from fadoctor.matrix import load_matrix

    facts = job(4, 2)
    schema = checked_in("job-facts.schema.json")
    assert violations(json.loads(facts.model_dump_json()), schema, schema["$defs"]) == []
    schema = checked_in("job-report.schema.json")
    data = json.loads(render_job(evaluate_job(facts, load_matrix()), Format.JSON))
    assert violations(data, schema, schema["$defs"]) == []


def test_the_walker_reports_a_departure() -> None:
    schema = checked_in("report.schema.json")
    found = violations({"schema_version": "1", "extra": 0}, schema, schema["$defs"])
    assert "$.schema_version: str where the schema says integer" in found
    assert "$: missing checks" in found and "$: extra is not in the schema" in found


@pytest.mark.parametrize("name", ["fa853-cxx11abi-true-wheel-on-pip-torch", "t4-fa2-installed"])
def test_json_output_has_the_documented_keys(name: str,
                                             report_of: Callable[[str], Report]) -> None:
    data = json.loads(render(report_of(name), Format.JSON))
    assert data["schema_version"] == 1
    assert data["checks"]
    findings = [f for check in data["checks"] for f in check["findings"]]
    remedies = [r for f in findings for r in f["remedies"]]
    assert findings and remedies  # these fixtures have problems with fixes
    for check in data["checks"]:
        assert isinstance(check["id"], str) and check["id"].startswith("FAD")
        assert check["status"] in ("passed", "warning", "failed", "skipped")
        assert isinstance(check["findings"], list)
    for finding in findings:
        assert finding["severity"] in ("error", "warning", "info")
        assert isinstance(finding["category"], str) and isinstance(finding["message"], str)
        assert isinstance(finding["evidence"], dict) and isinstance(finding["remedies"], list)
    for remedy in remedies:
        assert isinstance(remedy["summary"], str) and remedy["summary"]
        assert isinstance(remedy["commands"], list)
