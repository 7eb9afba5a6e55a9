"""Version-1 facts files are read as version 2: the claims version 1 made by default are kept,
and the same checks give the same verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

from fadoctor.evaluate import evaluate
from fadoctor.facts.model import SCHEMA_VERSION, Facts
from fadoctor.facts.v1 import upgrade
from fadoctor.matrix import load_matrix
from fadoctor.report import Status

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _is_v1_facts(data: object) -> bool:
    return isinstance(data, dict) and data.get("schema_version") == 1 and "flash_attention" in data

# Every version-1 file the project holds: the facts fixtures as version 1 wrote them, and the
# facts recorded on a real GPU machine.
# (Only facts: a recorded bench report has a schema_version of its own.)
V1_FILES = sorted(p for p in FIXTURES.rglob("*.json")
                  if _is_v1_facts(json.loads(p.read_text(encoding="utf-8"))))


def statuses(facts: Facts) -> Dict[str, Status]:
    return {r.id: r.status for r in evaluate(facts, load_matrix()).checks}


def test_the_version_1_files_are_the_ones_expected() -> None:
    folders = {p.parent.name for p in V1_FILES}
    assert folders == {"v1", "recorded"}
    assert len([p for p in V1_FILES if p.parent.name == "v1"]) == len(
        list((FIXTURES / "facts").glob("*.json")))


@pytest.mark.parametrize("path", V1_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_version_1_file_loads_as_version_2(path: Path) -> None:
    facts = Facts.model_validate_json(path.read_text(encoding="utf-8"))
    assert facts.schema_version == SCHEMA_VERSION == 2
    assert facts.origin == ("static" if facts.mode == "static" else "probe")
    # A version-1 probe's data never says "unknown": its defaults were what the probe saw.
    if facts.torch.data is not None:
        torch = facts.torch.data
        assert None not in (torch.cuda_available, torch.arch_list, torch.devices,
                            torch.device_count, torch.sdpa)
    if facts.driver.data is not None:
        assert facts.driver.data.gpus is not None
    if facts.host.data is not None:
        assert facts.host.data.environment is not None


@pytest.mark.parametrize("path", sorted((FIXTURES / "v1").glob("*.json")), ids=lambda p: p.stem)
def test_a_version_1_fixture_reads_as_its_version_2_twin(path: Path) -> None:
    old = Facts.model_validate_json(path.read_text(encoding="utf-8"))
    new = Facts.model_validate_json((FIXTURES / "facts" / path.name).read_text(encoding="utf-8"))
    assert old == new
    assert statuses(old) == statuses(new)


def _without_defaults(path: Path) -> Dict[str, Any]:
    """A version-1 file as version 1 could have written it: the fields with defaults left out."""
    data: Dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for key in ("arch_list", "cuda_available", "device_count", "devices", "sdpa"):
        data["torch"]["data"].pop(key, None)
    data["driver"]["data"].pop("gpus", None)
    data["host"]["data"].pop("environment", None)
    for dist in data["packages"]["data"]["distributions"]:
        dist.pop("top_level", None)
    return data


def test_an_absent_version_1_field_is_its_version_1_default_and_an_absent_version_2_one_unknown(
) -> None:
    data = _without_defaults(FIXTURES / "v1" / "rtx5090-torch-cu126.json")
    old = Facts.model_validate(data)
    torch = old.torch.data
    assert torch is not None
    assert (torch.cuda_available, torch.arch_list, torch.devices, torch.device_count,
            torch.sdpa) == (False, [], [], 0, [])
    assert old.driver.data is not None and old.driver.data.gpus == []
    assert statuses(old)["FAD105"] == Status.FAILED  # version 1: "torch sees no GPU"

    new = Facts.model_validate({**data, "schema_version": 2})
    assert new.torch.data is not None and new.torch.data.cuda_available is None
    assert statuses(new)["FAD105"] == Status.SKIPPED  # version 2: unknown


def test_upgrade_leaves_other_documents_alone() -> None:
    for other in ({"schema_version": 2}, {"schema_version": 99}, [], "text"):
        assert upgrade(other) == other
    original: Dict[str, Any] = {"schema_version": 1, "torch": {"ok": True, "data": {}}}
    upgraded = upgrade(original)
    assert original == {"schema_version": 1, "torch": {"ok": True, "data": {}}}  # not mutated
    assert upgraded["schema_version"] == 2 and upgraded["torch"]["data"]["cuda_available"] is False


def test_an_unknown_schema_version_is_still_refused() -> None:
    data = json.loads((FIXTURES / "facts" / "t4-fa2-installed.json").read_text(encoding="utf-8"))
    data["schema_version"] = 3
    with pytest.raises(ValueError, match="schema_version 3"):
        Facts.model_validate(data)
