"""torch releases held to their wheels: the entries, SDPA ranges, header defect and preload rules
the matrix states for 2.14.0 and 2.15.0, re-derived offline from tools/fixtures/torch_wheels.json."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any, Dict

import pytest
from packaging.version import Version

from fadoctor.matrix.load import load_matrix

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_torch_release",
                                                  ROOT / "tools" / "gen_torch_release.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def record() -> Dict[str, Any]:
    data: Dict[str, Any] = json.loads((ROOT / "tools" / "fixtures" / "torch_wheels.json").read_text())
    return data


def _wheel(record: Dict[str, Any], version: str) -> Dict[str, Any]:
    return next(w for w in record["wheels"].values() if w["version"].split("+")[0] == version)


def test_the_2_15_entry_is_what_its_wheel_derives(record: Dict[str, Any]) -> None:
    derived = {e["minor"]: e for e in _tool().entries(record)}
    assert list(derived) == ["2.15"]
    rel = load_matrix().torch_release(Version("2.15.0"))
    assert rel is not None
    entry = derived["2.15"]
    for field in ("latest_patch", "cuda_variants", "default_variant", "python", "cxx11_abi",
                  "platform_tag", "platform", "arch_lists", "source"):
        assert getattr(rel, field) == entry[field], field
    assert rel.arch_lists == {"cu132": "7.5;8.0;8.6;9.0;10.0;12.0"}  # the PyPI wheel: no +PTX


def test_sdpa_ranges_reach_2_15_as_its_library_states(record: Dict[str, Any]) -> None:
    matrix = load_matrix()
    for backend, text in _wheel(record, "2.15.0")["sdpa"].items():
        row = matrix.sdpa_range(backend, Version("2.15.0"))
        assert row is not None, backend
        low, high = (int(x.strip(" sm[]")) for x in text.split(","))
        assert (row.min_cc, row.max_cc) == (Version(f"{low // 10}.{low % 10}"),
                                            Version(f"{high // 10}.{high % 10}")), backend
    assert matrix.sdpa_range("flash", Version("2.16.0")) is None  # newer than the data


def test_the_cxx20_header_defect_covers_every_release_whose_headers_need_it(
        record: Dict[str, Any]) -> None:
    defect = next(d for d in load_matrix().known_defects
                  if d.id == "source-build-vs-cxx20-torch-headers")
    assert defect.torch is not None
    for wheel in record["wheels"].values():
        version = Version(wheel["version"].split("+")[0])
        assert wheel["cxx20_headers"] and defect.torch.contains(version), version
    assert not defect.torch.contains(Version("2.13.0"))  # its headers still compile as C++17


def test_2_15_preloads_after_a_load_best_effort_and_no_longer_curand(record: Dict[str, Any]) -> None:
    rules = _wheel(record, "2.15.0")["preload"]
    assert rules["global_deps"] and rules["marker"] == "libcudart.so"
    assert rules["search"] == "dep-paths-cu"
    assert not any(required for _, _, required in rules["after_load"])
    assert all(required for folder, _, required in rules["on_failure"] if folder != "nvtx")
    assert "curand" not in {folder for folder, _, _ in rules["on_failure"] + rules["after_load"]}


def test_arch_list_syntax() -> None:
    tool = _tool()
    assert tool.arch_list("-gencode;arch=compute_90,code=sm_90;-gencode;arch=compute_120,"
                          "code=sm_120;-gencode;arch=compute_120,code=compute_120") == "9.0;12.0+PTX"
    assert tool._python(["cp315t", "cp311", "cp314t", "cp314"]) == ["3.11", "3.14", "3.14t", "3.15t"]
