"""The compiled twin (data/compat_matrix.json) is the shipped YAML, validated: load_matrix reads
it instead of the YAML only while its digest matches."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from fadoctor.matrix.load import default_matrix_path, load_matrix, twin_path, write_twin


def test_the_shipped_twin_is_current(tmp_path: Path) -> None:
    shipped = default_matrix_path()
    if os.environ.get("FADOCTOR_UPDATE_GOLDEN"):
        write_twin(shipped)
    copy = tmp_path / shipped.name
    shutil.copy(shipped, copy)
    write_twin(copy)
    assert twin_path(copy).read_text(encoding="utf-8") == twin_path(shipped).read_text(
        encoding="utf-8"), "run FADOCTOR_UPDATE_GOLDEN=1 pytest tests/matrix/test_twin.py"


def test_the_twin_and_the_yaml_load_the_same_matrix(tmp_path: Path) -> None:
    copy = tmp_path / "m.yaml"
    shutil.copy(default_matrix_path(), copy)
    from_yaml = load_matrix(copy)  # no twin beside the copy: the YAML, every check
    write_twin(copy)
    assert load_matrix(copy) == from_yaml


def test_a_stale_twin_is_ignored(tmp_path: Path) -> None:
    copy = tmp_path / "m.yaml"
    shutil.copy(default_matrix_path(), copy)
    write_twin(copy)
    body = json.loads(twin_path(copy).read_text(encoding="utf-8"))
    body["matrix"]["torch_releases"] = []  # a marker only the twin carries
    twin_path(copy).write_text(json.dumps(body), encoding="utf-8")
    assert load_matrix(copy).torch_releases == []  # digest matches: the twin is what loads
    copy.write_text(copy.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert load_matrix(copy).torch_releases  # the YAML changed: the twin is ignored
