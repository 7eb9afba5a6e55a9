"""The compatibility matrix: the shipped file loads, cites its sources, and broken copies say where."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Sequence

import pytest
import yaml
from packaging.version import Version
from pydantic import BaseModel

from fadoctor.errors import InputError
from fadoctor.facts.model import Family
from fadoctor.matrix import Matrix, default_matrix_path, load_matrix
from fadoctor.matrix.models import Entry

Raw = Dict[str, Any]
_RAW: Raw = yaml.safe_load(default_matrix_path().read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def shipped() -> Matrix:
    return load_matrix()


@pytest.fixture
def raw() -> Raw:
    """A fresh copy of the shipped matrix as plain YAML data, to break."""
    return copy.deepcopy(_RAW)


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "compat_matrix.yaml"
    # JSON is YAML, and far quicker to write than yaml.safe_dump for a matrix this size.
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def entries(node: Any) -> Iterator[Entry]:
    """Every sourced entry in the matrix, wherever it sits."""
    if isinstance(node, Entry):
        yield node
    if isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from entries(getattr(node, name))
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from entries(item)


def load_error(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        load_matrix(path)
    return str(caught.value)


# -- the shipped matrix ---------------------------------------------------------------------------

def test_the_shipped_matrix_loads(shipped: Matrix) -> None:
    assert shipped.schema_version == 1
    assert shipped.torch_releases and shipped.flash_attn_releases and shipped.sdpa_backends


def test_every_entry_cites_a_source(shipped: Matrix) -> None:
    found = list(entries(shipped))
    lists: List[Sequence[Entry]] = [
        shipped.cuda_driver.floors, shipped.cuda_driver.toolkits, shipped.gpus,
        shipped.torch_releases, shipped.torch_apis, shipped.sdpa_backends, shipped.families,
        shipped.fa2_arch_gate, shipped.family_requirements, shipped.fa4_releases,
        shipped.rocm_backends, shipped.flash_attn_releases, shipped.known_defects,
        shipped.custom_ops, shipped.attention_features, shipped.head_dim_limits,
        shipped.backward_restrictions, shipped.wheel_sources, shipped.hub_kernels,
        shipped.attention_speed, shipped.community_wheels,
        [floor for family in shipped.families for floor in family.floors]]
    assert len(found) == sum(len(items) for items in lists)  # the walk saw every entry
    assert [e for e in found if not e.source.strip()] == []


def test_every_family_has_its_support_entry(shipped: Matrix) -> None:
    assert {f.family for f in shipped.families} == set(Family)


def test_every_torch_variant_has_a_driver_floor_and_toolkit_driver(shipped: Matrix) -> None:
    # check_driver_cuda needs both for every CUDA that a torch build in the matrix uses.
    for rel in shipped.torch_releases:
        for variant in rel.cuda_variants:
            cuda = Version(f"{variant[2:-1]}.{variant[-1]}")
            assert shipped.driver_floor(cuda.major) is not None, (rel.minor, variant)
            assert shipped.toolkit_driver(cuda) is not None, (rel.minor, variant)


def test_torch_release_maps_name_only_their_variants(shipped: Matrix) -> None:
    for rel in shipped.torch_releases:
        assert set(rel.arch_lists) <= set(rel.cuda_variants), rel.minor
        assert set(rel.cxx11_abi_variants) <= set(rel.cuda_variants), rel.minor
        assert rel.latest_patch.startswith(rel.minor + "."), rel.minor


def test_flash_attn_wheels_name_torch_minors(shipped: Matrix) -> None:
    # newest_release_with_wheel compares these with str(release(torch)): "2.7", never "2.7.1".
    for rel in shipped.flash_attn_releases:
        assert rel.wheel_torch or rel.wheels_unknown, rel.version
        assert all(len(Version(minor).release) == 2 for minor in rel.wheel_torch), rel.version


def test_queries(shipped: Matrix) -> None:
    rel = shipped.torch_release(Version("2.7.1+cu128"))
    assert rel is not None and rel.minor == "2.7"
    assert shipped.torch_release(Version("1.0.0")) is None
    toolkit = shipped.toolkit_driver(Version("12.1.105"))
    assert toolkit is not None and toolkit.min_driver == Version("530.30.02")
    floor = shipped.driver_floor(13)
    assert floor is not None and floor.min_driver == Version("580.65.06")
    flash = shipped.sdpa_range("flash", Version("2.7.1"))
    assert flash is not None and flash.max_cc == Version("12.0")
    assert shipped.sdpa_range("cudnn", Version("2.2.0")) is None  # no cuDNN backend before 2.3
    assert shipped.fa_release(Version("2.8.3")) is not None
    assert shipped.family_support(Family.FA3).max_cc == Version("9.0")


# -- invariants on broken copies: InputError naming the entry -------------------------------------

def _dup_torch_minor(raw: Raw) -> None:
    raw["torch_releases"].append(copy.deepcopy(raw["torch_releases"][3]))


def _default_not_a_variant(raw: Raw) -> None:
    raw["torch_releases"][4]["default_variant"] = "cu999"


def _missing_family(raw: Raw) -> None:
    raw["families"] = [f for f in raw["families"] if f["family"] != "fa4"]


def _dup_family(raw: Raw) -> None:
    raw["families"].append(copy.deepcopy(raw["families"][0]))


def _dup_fa_release(raw: Raw) -> None:
    raw["flash_attn_releases"].append(copy.deepcopy(raw["flash_attn_releases"][-1]))


def _empty_source(raw: Raw) -> None:
    raw["sdpa_backends"][2]["source"] = "  "


def _bad_version(raw: Raw) -> None:
    raw["cuda_driver"]["floors"][1]["min_driver"] = "five-twenty-five"


def _unknown_key(raw: Raw) -> None:
    raw["torch_releases"][0]["cuda_variant"] = "cu117"  # a typo of cuda_variants


def _no_source(raw: Raw) -> None:
    del raw["fa2_arch_gate"][0]["source"]


@pytest.mark.parametrize(("breaks", "names"), [
    (_dup_torch_minor, lambda r: ["torch_releases", repr(r["torch_releases"][3]["minor"])]),
    (_default_not_a_variant, lambda r: [f"torch {r['torch_releases'][4]['minor']}", "cu999"]),
    (_missing_family, lambda r: ["families", "fa4"]),
    (_dup_family, lambda r: ["families", repr(r["families"][0]["family"])]),
    (_dup_fa_release, lambda r: ["flash_attn_releases", r["flash_attn_releases"][-1]["version"]]),
    (_empty_source, lambda r: ["sdpa_backends.2.source", "non-empty source"]),
    (_bad_version, lambda r: ["cuda_driver.floors.1.min_driver", "five-twenty-five"]),
    (_unknown_key, lambda r: ["torch_releases.0.cuda_variant"]),
    (_no_source, lambda r: ["fa2_arch_gate.0.source"]),
])
def test_a_broken_matrix_names_the_entry(tmp_path: Path, raw: Raw, breaks: Callable[[Raw], None],
                                         names: Callable[[Raw], List[str]]) -> None:
    breaks(raw)
    message = load_error(write(tmp_path, raw))
    assert str(tmp_path / "compat_matrix.yaml") in message
    for fragment in names(raw):
        assert fragment in message


def test_an_unbroken_copy_loads(tmp_path: Path, raw: Raw, shipped: Matrix) -> None:
    assert load_matrix(write(tmp_path, raw)) == shipped  # the copy above is faithful


def test_a_file_that_is_not_yaml(tmp_path: Path) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text("torch_releases: [unclosed\n  - {minor: \"2.7\"\n", encoding="utf-8")
    message = load_error(path)
    assert "not valid YAML" in message and "\n" not in message


@pytest.mark.parametrize("content", ["- just\n- a list\n", "42\n", ""])
def test_yaml_that_is_not_a_matrix(tmp_path: Path, content: str) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text(content, encoding="utf-8")
    assert "is invalid" in load_error(path)


def test_a_missing_file(tmp_path: Path) -> None:
    message = load_error(tmp_path / "nowhere.yaml")
    assert "cannot read matrix" in message and "nowhere.yaml" in message


def test_a_folder_instead_of_a_file(tmp_path: Path) -> None:
    assert "is a folder, not a regular file" in load_error(tmp_path)
