"""FAD121 against real transformers releases, each in its own venv (tests/helpers/hf_venvs.py) over
the CPU torch: what each attn_implementation runs, falls back to, or fails with, by release, as
`fadoctor check --python VENV` reports it — and that asking never downloads anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from tests.helpers.broken import requires_torch
from tests.helpers.hf_venvs import venv_with

pytestmark = [pytest.mark.slow, requires_torch]  # the target needs a torch for FAD121


def _check(python: Path, hf_home: Path) -> Dict[str, Any]:
    """FAD121 of `fadoctor check --python python`, and the facts' transformers record."""
    env = {**os.environ, "HF_HOME": str(hf_home)}
    env.pop("HF_HUB_OFFLINE", None)
    done = subprocess.run([sys.executable, "-m", "fadoctor", "snapshot", "-o", "-", "--python",
                           str(python), "--kernels", "none"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    path = hf_home / "facts.json"
    path.write_text(done.stdout, encoding="utf-8")
    report = subprocess.run([sys.executable, "-m", "fadoctor", "check", "--facts", str(path),
                             "--only", "FAD121", "--format", "json"],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode in (0, 1), report.stderr
    (check,) = json.loads(report.stdout)["checks"]
    return {"facts": facts["transformers"], "check": check}


def _by_subject(check: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {f["subject"]: f for f in check["findings"]}


def _downloaded(hf_home: Path) -> List[str]:
    """What reached the Hub cache, less facts.json and the cache-layout marker some releases
    (4.46) write when they are imported (hub/version.txt), which is no download."""
    return sorted(str(p.relative_to(hf_home)) for p in hf_home.rglob("*")
                  if p.is_file() and p.name != "facts.json"
                  and p.relative_to(hf_home).as_posix() != "hub/version.txt")


def test_transformers_4_46_knows_only_flash_attention_2_and_sdpa(tmp_path: Path) -> None:
    out = _check(venv_with("4.46.3"), tmp_path)
    data = out["facts"]["data"]
    assert data["version"] == "4.46.3" and data["known"] is None  # no AttentionInterface yet
    findings = _by_subject(out["check"])
    assert findings["sdpa"]["severity"] == "info"
    assert findings["sdpa"]["message"].endswith("runs sdpa")
    fa2 = findings["flash_attention_2"]["message"]
    assert "fails with: ImportError: FlashAttention2 has been toggled on" in fa2
    assert "flash_attn seems to be not installed" in fa2
    for name in ("flash_attention_3", "kernels-community/flash-attn2"):
        assert "is not supported" in findings[name]["message"], name
    assert all(not d["network"] and not d["hub_kernels"] for d in data["decisions"])
    assert out["check"]["status"] == "passed"  # nothing installed that fails: information only
    assert _downloaded(tmp_path) == []


def test_transformers_4_57_has_flash_attention_3_but_not_4(tmp_path: Path) -> None:
    out = _check(venv_with("4.57.6"), tmp_path)
    data = out["facts"]["data"]
    assert "flash_attention_3" in data["known"] and "flash_attention_4" not in data["known"]
    assert data["availability"]["is_kernels_available"] is False
    findings = _by_subject(out["check"])
    assert "flash_attention_4" not in findings  # asked only of a release that knows it
    assert "the package flash_attn_3 seems to be not installed" in \
        findings["flash_attention_3"]["message"]
    assert "`kernels` is either not installed" in \
        findings["kernels-community/flash-attn2"]["message"]
    assert _downloaded(tmp_path) == []


def test_transformers_5_24_asks_for_flash_attention_4(tmp_path: Path) -> None:
    out = _check(venv_with("5.24.0"), tmp_path)
    data = out["facts"]["data"]
    assert data["version"] == "5.24.0" and "flash_attention_4" in data["known"]
    assert data["availability"]["is_flash_attn_4_available"] is False
    findings = _by_subject(out["check"])
    assert "FlashAttention4 has been toggled on" in findings["flash_attention_4"]["message"]
    assert findings["sdpa"]["severity"] == "info"
    assert _downloaded(tmp_path) == []


def test_a_missing_flash_attn_falls_back_to_a_hub_kernel_that_is_never_downloaded(
        tmp_path: Path) -> None:
    out = _check(venv_with("5.0.0+kernels"), tmp_path)
    data = out["facts"]["data"]
    assert data["availability"]["is_kernels_available"] is True
    decisions = {d["requested"]: d for d in data["decisions"]}
    fa2 = decisions["flash_attention_2"]
    assert fa2["hub_kernels"] == ["kernels-community/flash-attn2"]
    assert fa2["network"]  # transformers reached for the Hub, and fadoctor refused
    assert decisions["flash_attention_3"]["hub_kernels"] == ["kernels-community/vllm-flash-attn3"]
    assert decisions["sdpa"]["network"] == []
    finding = _by_subject(out["check"])["flash_attention_2"]
    assert finding["severity"] == "warning"
    assert "falls back to the Hub kernel kernels-community/flash-attn2" in finding["message"]
    assert "downloads and runs that kernel's code" in finding["message"]
    assert "FlashAttention2 has been toggled on" in finding["message"]  # what it fails with then
    assert out["check"]["status"] == "warning"
    assert _downloaded(tmp_path) == []  # nothing reached HF_HOME
