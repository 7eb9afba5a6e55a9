"""flash-attn releases read from their sdist only (2.8.3.post2): setup.py's fields carry over
from the tag whose setup.py has the same digest, and the wheel set stays unknown - never copied
from another release."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from packaging.version import Version

from fadoctor.install.wheels import newest_release_with_wheel
from fadoctor.matrix.load import load_matrix

pytest.importorskip("tomllib", reason="the generators read pyproject.toml with tomllib (Python 3.11+)")

ROOT = Path(__file__).resolve().parents[2]
SETUP_FIELDS = ("readme_min_torch", "requires_python", "cuda_tag_rule", "min_nvcc",
                "readme_min_cuda", "platform", "build_archs", "arch_env")


def test_post2_is_post1s_setup_py_with_no_wheels() -> None:
    matrix = load_matrix()
    record = json.loads((ROOT / "tools" / "fixtures" / "fa2_sdists.json").read_text("utf-8"))
    for sdist in record["releases"]:
        rel = matrix.fa_release(Version(sdist["version"]))
        base = next(r for r in matrix.flash_attn_releases if r.tag == sdist["same_setup_as"])
        assert rel is not None and rel.wheels_unknown and rel.tag is None
        assert not rel.assets and not rel.wheel_torch and not rel.built_against
        for field in SETUP_FIELDS:
            assert getattr(rel, field) == getattr(base, field), field
        assert sdist["setup_py_sha256"][:12] in rel.setup_source


def test_the_generator_writes_the_same_entry() -> None:
    spec = importlib.util.spec_from_file_location("gen_matrix_fa2", ROOT / "tools" / "gen_matrix_fa2.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    matrix = load_matrix()
    known = [{"tag": r.tag, "archs": r.archs, **{k: getattr(r, k) for k in SETUP_FIELDS}}
             for r in matrix.flash_attn_releases if r.tag]
    for sdist in json.loads(tool.SDISTS.read_text(encoding="utf-8"))["releases"]:
        entry = tool.sdist_entry(sdist, known)
        rel = matrix.fa_release(Version(sdist["version"]))
        assert rel is not None and entry["source"] == rel.source
        assert entry["cuda_tag_rule"] == rel.cuda_tag_rule and entry["min_nvcc"] == rel.min_nvcc


def test_no_wheel_of_an_unknown_wheel_set_is_offered() -> None:
    matrix = load_matrix()
    newest = newest_release_with_wheel(matrix, Version("2.8.0"))
    assert newest is not None and newest.version == Version("2.8.3.post1")
