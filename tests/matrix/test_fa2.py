"""The FlashAttention-2 release data, spot-checked against the reference notes it came from
(../shared/reference: flash_attn_facts.md sections named per test, fa_wheel_matrix.yaml), and the
generator that writes it."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType
from typing import Optional

import pytest

pytest.importorskip("tomllib", reason="the generators read pyproject.toml with tomllib (Python 3.11+)")
from packaging.version import Version

from fadoctor.matrix import Matrix
from fadoctor.matrix.fa2 import FlashAttnRelease, LocalVersion, cuda_tag_for, parse_local
from fadoctor.report import Category

ROOT = Path(__file__).resolve().parents[2]


def fa(matrix: Matrix, version: str) -> FlashAttnRelease:
    rel = matrix.fa_release(Version(version))
    assert rel is not None, version
    return rel


# -- the ABI of what was built (§2 caveat, §5.2) ------------------------------------------------

def test_283_torch26_false_wheel_was_built_against_cu126_which_is_abi1(matrix: Matrix) -> None:
    rel = fa(matrix, "2.8.3")
    local = "cu12torch2.6cxx11abiFALSE"
    assert rel.assets[local] == ["cp39", "cp310", "cp311", "cp312", "cp313"]
    assert rel.built_against_variant(local) == "cu126"
    torch26 = matrix.torch_release(Version("2.6.0"))
    assert torch26 is not None and torch26.variant_abi("cu126") is True
    assert torch26.variant_abi("cu124") is False
    assert matrix.wheel_cxx11_abi(rel, local) is True  # labelled FALSE, really ABI 1
    defect = next(d for d in matrix.defects_for(rel.version)
                  if d.category == Category.CXX11_ABI_MISMATCH)
    assert defect.applies(Version("2.6.0+cu124"), cxx11_abi=False)
    assert not defect.applies(Version("2.6.0+cu126"), cxx11_abi=True)
    assert defect.matches(Version("2.6.0+cu124")) is None  # the ABI is unknown: not a verdict


def test_2741_built_torch26_against_cu124_abi0(matrix: Matrix) -> None:
    rel = fa(matrix, "2.7.4.post1")
    assert rel.built_against["cu12torch2.6"] == "cu124"
    assert rel.built_against_torch["cu12torch2.6"] == "2.6.0"
    assert matrix.wheel_cxx11_abi(rel, "cu12torch2.6cxx11abiFALSE") is False
    assert not [d for d in matrix.defects_for(rel.version)
                if d.category == Category.CXX11_ABI_MISMATCH]


def test_true_wheels_are_abi1_and_nightly_builds_are_unknown(matrix: Matrix) -> None:
    assert matrix.wheel_cxx11_abi(fa(matrix, "2.5.8"), "cu122torch2.3cxx11abiTRUE") is True
    # 2.5.8 built torch 2.3 against the released 2.3.0 (cu121, ABI 0); 2.5.7 against a nightly.
    assert matrix.wheel_cxx11_abi(fa(matrix, "2.5.8"), "cu122torch2.3cxx11abiFALSE") is False
    nightly = fa(matrix, "2.5.7")
    assert nightly.built_against_torch["cu122torch2.3"] == "2.3.0.dev20240207"
    assert matrix.wheel_cxx11_abi(nightly, "cu122torch2.3cxx11abiFALSE") is None
    assert matrix.wheel_cxx11_abi(fa(matrix, "2.0.0.post1"), "cu113torch1.12.1") is None


def test_every_false_wheel_built_against_abi1_is_a_known_defect(matrix: Matrix) -> None:
    mislabelled = {(str(r.version), local) for r in matrix.flash_attn_releases
                   for local in r.assets
                   if local.endswith("FALSE") and matrix.wheel_cxx11_abi(r, local)}
    assert {v for v, _ in mislabelled} == {"2.8.0", "2.8.0.post1", "2.8.0.post2", "2.8.1", "2.8.2",
                                           "2.8.3", "2.8.3.post1"}
    assert {local[:12] for _, local in mislabelled} == {"cu12torch2.6", "cu12torch2.7",
                                                        "cu12torch2.8"}


# -- archs (§1.4) ----------------------------------------------------------------------------------

def test_224_has_no_sm90_and_its_post1_does(matrix: Matrix) -> None:
    assert fa(matrix, "2.2.4").archs == ["sm_80"]
    assert "sm_90" not in fa(matrix, "2.2.4").build_archs
    assert fa(matrix, "2.2.4.post1").archs == ["sm_80", "sm_90"]
    defect = next(d for d in matrix.defects_for(Version("2.2.4"))
                  if d.category == Category.NO_KERNEL_IMAGE)
    assert defect.applies(cc=Version("9.0")) and not defect.applies(cc=Version("8.0"))
    assert not any(d.id.startswith("no-sm90") for d in matrix.defects_for(Version("2.2.4.post1")))


def test_blackwell_kernels_from_280_and_the_arch_env_from_273(matrix: Matrix) -> None:
    for version in ("2.7.3", "2.7.4.post1"):  # CI CUDA 12.3 / 12.4: older than the 12.8 needed
        rel = fa(matrix, version)
        assert rel.archs == ["sm_80", "sm_90"] and rel.build_archs["sm_120"] == "12.8"
        assert rel.arch_env == "FLASH_ATTN_CUDA_ARCHS"
    for rel in matrix.flash_attn_releases:
        assert ("sm_120" in rel.archs) == (rel.version >= Version("2.8.0")), rel.version
        assert (rel.arch_env is not None) == (rel.version >= Version("2.7.3")), rel.version
        assert rel.archs_source.startswith("derived:"), rel.version
    assert fa(matrix, "2.7.2.post1").build_archs == {"sm_80": "11.7", "sm_90": "11.8"}


def test_older_toolkits_built_fewer_archs(matrix: Matrix) -> None:
    # v2.0.6 built cu116/cu117 wheels with nvcc 11.6/11.7, below the 11.8 that sm_90 needs.
    rel = fa(matrix, "2.0.6")
    assert rel.archs_by_cuda == {"cu116": ["sm_80"], "cu117": ["sm_80"]}
    assert rel.wheel_archs("cu117torch2.0cxx11abiTRUE") == ["sm_80"]
    assert rel.wheel_archs("cu118torch2.0cxx11abiTRUE") == ["sm_80", "sm_90"]
    assert fa(matrix, "2.0.5").archs == ["sm_80"]  # legacy CI: CUDA 11.3 and 11.6 only


# -- runners, glibc (§2, §5.9) -------------------------------------------------------------------

def test_runner_images(matrix: Matrix) -> None:
    for rel in matrix.flash_attn_releases:
        v = rel.version
        if rel.wheels_unknown:  # read from its sdist only: no workflow, no runner
            assert rel.builds_on == "unknown" and not rel.assets, v
            continue
        expected = ("ubuntu-18.04" if v < Version("2.0.6") else "ubuntu-20.04" if v < Version("2.8.0")
                    else "unknown" if v == Version("2.8.0") else "ubuntu-22.04")
        assert rel.builds_on == expected, v
    glibc = next(d for d in matrix.known_defects if d.min_glibc is not None)
    assert glibc.affects(Version("2.8.0.post1")) and not glibc.affects(Version("2.7.4.post1"))
    assert glibc.applies(glibc=Version("2.31")) and not glibc.applies(glibc=Version("2.35"))
    assert glibc.wheels_only and glibc.category == Category.GLIBC_TOO_OLD


# -- setup.py (§1.1, §1.3) -----------------------------------------------------------------------

@pytest.mark.parametrize(("version", "rule"), [
    ("2.0.0.post1", "none"), ("2.0.5", "none"), ("2.0.6", "exact"), ("2.2.3.post1", "exact"),
    ("2.2.3.post2", "torch21_cu122"), ("2.3.1", "torch21_cu122"),
    ("2.3.1.post1", "torch21_cu12_cu122"), ("2.3.5", "torch21_cu12_cu122"),
    ("2.3.6", "cu118_or_cu122"), ("2.6.0.post1", "cu118_or_cu122"), ("2.6.1", "cu118_or_cu123"),
    ("2.6.3", "cu118_or_cu123"), ("2.7.0", "major_12"), ("2.8.3", "major_12"),
    ("2.8.3.post1", "major"),
])
def test_cuda_tag_rule_per_tag(matrix: Matrix, version: str, rule: str) -> None:
    assert fa(matrix, version).cuda_tag_rule == rule


@pytest.mark.parametrize(("rule", "cuda", "minor", "tag"), [
    ("none", "12.1", "2.1", None),
    ("exact", "11.7", "2.0", "117"), ("exact", "12.1", "2.1", "121"),
    ("torch21_cu122", "11.8", "2.1", "122"),  # the upstream bug: any CUDA
    ("torch21_cu122", "11.8", "2.0", "118"),
    ("torch21_cu12_cu122", "11.8", "2.1", "118"), ("torch21_cu12_cu122", "12.1", "2.1", "122"),
    ("cu118_or_cu122", "11.7", "2.2", "118"), ("cu118_or_cu122", "12.4", "2.2", "122"),
    ("cu118_or_cu123", "12.1", "2.3", "123"),
    ("major_12", "11.8", "2.5", "11"), ("major_12", "13.0", "2.8", "12"),
    ("major", "13.0", "2.8", "13"), ("major", "12.9", "2.8", "12"),
])
def test_cuda_tag_for(rule: str, cuda: str, minor: str, tag: Optional[str]) -> None:
    assert cuda_tag_for(rule, Version(cuda), minor) == tag  # type: ignore[arg-type]


def test_local_version_is_setup_pys_guess(matrix: Matrix) -> None:
    guess = fa(matrix, "2.8.3").local_version(Version("2.6.0+cu124"), Version("12.4"), False)
    assert guess == "cu12torch2.6cxx11abiFALSE"
    assert fa(matrix, "2.8.3.post1").local_version(Version("2.9.1"), Version("13.0"), True) \
        == "cu13torch2.9cxx11abiTRUE"
    assert fa(matrix, "2.0.5").local_version(Version("1.12.1"), Version("11.6"), False) is None


def test_parse_local() -> None:
    assert parse_local("cu12torch2.10cxx11abiTRUE") == LocalVersion("12", "2.10", True)
    assert parse_local("cu113torch1.12.1") == LocalVersion("113", "1.12.1", None)
    assert parse_local("cu113torch1.12.1").torch_minor == "1.12"  # type: ignore[union-attr]
    assert parse_local("cu12torch2.6cxx11abiFALSE").key == "cu12torch2.6"  # type: ignore[union-attr]
    assert parse_local("rocm62torch2.6cxx11abiTRUE") is None


@pytest.mark.parametrize(("version", "nvcc", "readme_cuda", "torch", "python"), [
    ("2.0.5", "11.0", "11.4", "1.12", ">=3.7"), ("2.0.6", "11.4", "11.4", "1.12", ">=3.7"),
    ("2.1.2", "11.6", "11.6", "1.12", ">=3.7"), ("2.6.0", "11.6", "11.6", "1.12", ">=3.8"),
    ("2.7.0", "11.7", "11.7", "1.12", ">=3.8"), ("2.7.1.post2", "11.7", "11.7", "1.12", ">=3.9"),
    ("2.7.4", "11.7", "12.0", "2.1", ">=3.9"), ("2.8.3.post1", "11.7", "12.0", "2.2", ">=3.9"),
])
def test_setup_py_and_readme_minimums(matrix: Matrix, version: str, nvcc: str, readme_cuda: str,
                                      torch: str, python: str) -> None:
    rel = fa(matrix, version)
    assert (rel.min_nvcc, str(rel.readme_min_cuda)) == (nvcc, readme_cuda)
    assert (str(rel.readme_min_torch), str(rel.requires_python)) == (torch, python)


# -- the workflow's matrix (fa_wheel_matrix.yaml) ------------------------------------------------

def test_271_could_not_build_its_torch26_jobs(matrix: Matrix) -> None:
    # '2.6' was missing from the workflow's minv/maxv table at v2.7.1: KeyError, no torch, no
    # wheel; fixed in v2.7.1.post1.
    rel = fa(matrix, "2.7.1")
    assert "2.6" in rel.wheel_torch and set(rel.not_built) == {
        "cu11torch2.6cxx11abiFALSE", "cu11torch2.6cxx11abiTRUE",
        "cu12torch2.6cxx11abiFALSE", "cu12torch2.6cxx11abiTRUE"}
    assert not any("torch2.6" in local for local in rel.assets)
    assert "KeyError" in (rel.not_built_reason or "")
    assert "cu12torch2.6cxx11abiTRUE" in fa(matrix, "2.7.1.post1").assets


def test_legacy_releases(matrix: Matrix) -> None:
    rel = fa(matrix, "2.0.0.post1")
    assert rel.tag == "v2.0.0" and rel.cuda_tag_rule == "none"
    assert set(rel.assets) == {"cu113torch1.11.0", "cu113torch1.12.0", "cu116torch1.12.0",
                               "cu113torch1.12.1", "cu116torch1.12.1"}
    assert rel.built_against["cu116torch1.12.1"] == "cu116"


def test_every_asset_python_satisfies_requires_python(matrix: Matrix) -> None:
    for rel in matrix.flash_attn_releases:
        for pythons in rel.assets.values():
            for tag in pythons:
                assert Version(f"{tag[2]}.{tag[3:]}") in rel.requires_python, (rel.version, tag)
        assert rel.platform == "linux_x86_64"


def test_wheel_torch_keeps_its_meaning(matrix: Matrix) -> None:
    # The workflow's torch axis, as configured (checks compare it with str(release(torch))).
    assert fa(matrix, "2.8.3").wheel_torch == ["2.4", "2.5", "2.6", "2.7", "2.8"]
    assert fa(matrix, "2.7.1").wheel_torch_nightlies == ["2.6.0.dev20241010"]
    assert fa(matrix, "2.6.3").wheel_cuda == ["11.8.0", "12.3.2"]


# -- the generator -------------------------------------------------------------------------------

def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_matrix_fa2", ROOT / "tools" / "gen_matrix_fa2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = ROOT.parent / "shared" / "reference"


@pytest.mark.skipif(not (REFERENCE / "fa_wheel_matrix.yaml").is_file(),
                    reason="the reference notes live beside the repository, not in it")
def test_the_committed_blocks_are_what_the_generator_writes(tmp_path: Path) -> None:
    gen = _generator()
    assert gen.main(["--check", "--reference", str(REFERENCE)]) == 0
    copy = tmp_path / "compat_matrix.yaml"
    shutil.copy(ROOT / "data" / "compat_matrix.yaml", copy)
    assert gen.main(["--reference", str(REFERENCE), "--matrix", str(copy)]) == 0
    assert copy.read_text(encoding="utf-8") == (ROOT / "data" / "compat_matrix.yaml").read_text(
        encoding="utf-8")


def test_the_generator_refuses_a_file_without_markers(tmp_path: Path) -> None:
    gen = _generator()
    plain = tmp_path / "m.yaml"
    plain.write_text("schema_version: 1\n", encoding="utf-8")
    if not (REFERENCE / "fa_wheel_matrix.yaml").is_file():
        pytest.skip("needs the reference notes")
    with pytest.raises(SystemExit, match="markers"):
        gen.main(["--reference", str(REFERENCE), "--matrix", str(plain)])
