"""`fadoctor model` and `check --model` end to end (the real CLI, no GPU: --no-detect, facts)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.model_configs import config_file
from typer.testing import CliRunner

from fadoctor.cli.app import app

QWEN7B = config_file("qwen2.5-7b")  # a file path: fadoctor does not ship it
RUNNER = CliRunner()
FACTS = Path(__file__).resolve().parents[1] / "fixtures" / "facts"


def test_model_json_for_a_shipped_config() -> None:
    result = RUNNER.invoke(app, ["model", "llama-3.1-8b", "--no-detect", "--gpu-memory", "80",
                                 "--method", "lora", "--seq", "4096", "--format", "json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert body["spec"]["num_kv_heads"] == 8 and body["memory"]["fits"] is True
    assert body["largest_batch"] >= 1 and body["recommendation"]["attn_implementation"] == "sdpa"


def test_model_text_and_does_not_fit_exit_code() -> None:
    result = RUNNER.invoke(app, ["model", str(QWEN7B), "--no-detect", "--gpu-memory", "24",
                                 "--method", "full"])
    assert result.exit_code == 1
    assert "does not fit" in result.output and "AdamW states" in result.output


def test_model_folder_and_bad_input(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["model", str(tmp_path / "nothing"), "--no-detect"])
    assert result.exit_code == 2 and result.output.startswith("fadoctor: error: no model config")
    (tmp_path / "config.json").write_text('{"model_type": "llama", "hidden_size": "big"}')
    result = RUNNER.invoke(app, ["model", str(tmp_path), "--no-detect"])
    assert result.exit_code == 2 and "fadoctor: error:" in result.output
    result = RUNNER.invoke(app, ["model", "llama-3.1-8b", "--no-detect", "--method", "bogus"])
    assert result.exit_code == 2 and "method" in result.output


def test_check_with_a_model_adds_its_findings() -> None:
    facts = FACTS / "h100-torch211-cu130-no-fa.json"
    result = RUNNER.invoke(app, ["check", "--facts", str(facts), "--format", "json", "--model",
                                 str(QWEN7B), "--model-plan", "method=full,batch=4,seq=4096"])
    report = json.loads(result.output)
    by_id = {c["id"]: c for c in report["checks"]}
    memory = by_id["FAD151"]
    assert memory["status"] == "failed"
    assert memory["findings"][0]["category"] == "out_of_memory"
    assert by_id["FAD150"]["status"] in ("passed", "warning")
    plain = RUNNER.invoke(app, ["check", "--facts", str(facts), "--format", "json"])
    assert "FAD151" not in plain.output  # without --model the report keeps its checks


def test_model_plan_errors_are_usage_errors() -> None:
    facts = FACTS / "h100-torch211-cu130-no-fa.json"
    result = RUNNER.invoke(app, ["check", "--facts", str(facts), "--model", str(QWEN7B),
                                 "--model-plan", "speed=fast"])
    assert result.exit_code == 2 and "--model-plan 'speed'" in result.output
