"""FlashAttention-4's betas held to their sources: the matrix's fa4_releases block is re-derived
from the recorded gate lines and requirements (tools/fixtures/fa4_betas.json), offline."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from packaging.version import Version

from fadoctor.matrix.load import load_matrix

pytest.importorskip("tomllib", reason="the generators read pyproject.toml with tomllib (Python 3.11+)")

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_fa4_betas", ROOT / "tools" / "gen_fa4_betas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_block_is_what_the_record_derives() -> None:
    tool = _tool()
    record = json.loads(tool.RECORD.read_text(encoding="utf-8"))
    derived = {e["version"]: e for e in tool.entries(record)}
    shipped = load_matrix().fa4_releases
    assert [str(r.version) for r in shipped] == list(derived)
    for rel in shipped:
        entry = derived[str(rel.version)]
        assert rel.forward_cc_majors == entry["forward_cc_majors"], rel.version
        assert rel.backward_cc_majors == entry["backward_cc_majors"], rel.version
        assert rel.published == entry["published"], rel.version
        assert rel.dependencies == entry["dependencies"], rel.version


def test_gates_by_release_and_direction() -> None:
    betas = load_matrix().fa4_releases
    assert all(r.accepts(8, "backward") is False for r in betas)  # no training on 8.x, ever
    early = [r for r in betas if r.version <= Version("4.0.0b4")]
    assert early and all(r.forward_cc_majors == [9, 10, 11] for r in early)
    later = [r for r in betas if r.version >= Version("4.0.0b5")]
    assert all(r.accepts(8, "forward") and r.accepts(12, "backward") for r in later)


def test_a_beta_never_published_is_marked() -> None:
    by_version = {str(r.version): r for r in load_matrix().fa4_releases}
    assert by_version["4.0.0b6"].published is False  # tagged, absent from the version list
    assert by_version["4.0.0b3"].published is True and by_version["4.0.0b3"].tag is None
    assert by_version["4.0.0b36"].published is True


def test_gate_lines_parse() -> None:
    tool = _tool()
    text = ("def _flash_attn_fwd(\n    assert arch // 10 in [8, 9], 'x'\n"
            "def _flash_attn_bwd(\n    x = 1\n    assert arch // 10 in [9], 'y'\n")
    lines = tool.gate_lines(text)
    assert tool.majors(lines["forward"]) == [8, 9] and tool.majors(lines["backward"]) == [9]
