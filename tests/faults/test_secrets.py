"""Secrets in the environment never reach facts or reports: variables whose name says token,
secret, key, password or credential, whatever their prefix, and the passwords in URLs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.faults.conftest import base_environ, fadoctor

from fadoctor.facts.files import loads

SECRETS = {
    "PYTORCH_HF_TOKEN": "hf_abcdefsecret1",
    "FLASH_ATTN_API_KEY": "secret2",
    "TORCHINDUCTOR_REMOTE_PASSWORD": "secret3",
    "PYTORCH_CREDENTIALS_FILE": "secret4",
    "CUTE_DSL_SECRET": "secret5",
    "TORCH_CUDNN_Passwd": "secret6",
    "PYTORCH_token": "secret7",
}
URLS = {"PYTORCH_CACHE_URL": "https://user:secret8@cache.example/x",
        "FLASH_ATTENTION_MIRROR": "https://ghp_secret9@github.example/y"}


def test_snapshot_and_reports_hold_no_secret(tmp_path: Path) -> None:
    env = base_environ(**SECRETS, **URLS, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
    facts = tmp_path / "facts.json"
    run = fadoctor("snapshot", "--static", "-o", str(facts), env=env)
    assert run.code == 0, run
    text = facts.read_text(encoding="utf-8")
    environment = json.loads(text)["host"]["data"]["environment"]
    for name in SECRETS:
        assert environment[name] == "<redacted>"
    assert environment["PYTORCH_CACHE_URL"] == "https://<redacted>@cache.example/x"
    assert environment["FLASH_ATTENTION_MIRROR"] == "https://<redacted>@github.example/y"
    assert environment["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"  # kept
    for n in range(1, 10):
        assert f"secret{n}" not in text
    for fmt in ("json", "markdown", "text"):
        report = fadoctor("check", "--facts", str(facts), "--format", fmt, "-v").text
        assert "secret" not in report.lower().replace("secrets", "")


def test_a_hand_written_facts_file_is_redacted_when_read(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "facts" / "t4-fa2-installed.json"
    raw = json.loads(fixture.read_text(encoding="utf-8"))
    raw["host"]["data"]["environment"] = {"MY_SECRET_KEY": "secret1",
                                          "CUDA_VISIBLE_DEVICES": ""}
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    run = fadoctor("check", "--facts", str(path), "--format", "json", "-v")
    assert run.code == 1 and "secret1" not in run.text
    loaded = loads(path.read_text(encoding="utf-8"), "facts")
    assert loaded.host.data is not None
    assert loaded.host.data.environment == {"MY_SECRET_KEY": "<redacted>",
                                            "CUDA_VISIBLE_DEVICES": ""}
