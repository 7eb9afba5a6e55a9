"""Transformer Engine refuses the installed flash-attn: the range each TE release accepts comes
from data/te_flash_attn.yaml (tools/gen_te_flash.py, read at every NVIDIA/TransformerEngine
tag); the texts are written for these tests in the shape TE's assert and warning print."""

from __future__ import annotations

from packaging.version import Version

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_te import releases


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(c for r in top.remedies for c in [r.summary, *r.commands, r.code or ""])


def test_the_generated_ranges_are_ordered_and_cited() -> None:
    table = releases()
    assert Version("1.9") in table and Version("2.18") in table
    assert table[Version("1.9")]["max"] == "2.5.8"  # attention.py:76 at v1.9
    for te, row in table.items():
        assert row["where"].startswith(f"NVIDIA/TransformerEngine@v{te}:")
        if "max" in row:
            assert Version(row["min"]) <= Version(row["max"])
        if "install_requires" in row:  # setup.py's install_reqs, read at the same tag
            assert row["install_where"].startswith(f"NVIDIA/TransformerEngine@v{te}:")
    # the packaging caps (v0.12-v1.0: <=2.0.4) and none from v1.12, where flash-attn is optional
    assert table[Version("1.0")]["install_requires"] == "flash-attn>=1.0.6, <=2.0.4"
    assert "install_requires" not in table[Version("1.12")]


def test_the_warning_of_te_1_12_and_later_pins_the_newest_accepted(matrix: Matrix) -> None:
    text = ("[WARNING | DotProductAttention]: Supported flash-attn versions are >= 2.1.1, "
            "<= 2.6.3. Found flash-attn 2.7.0.post2.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    said = _said(top)
    assert "flash-attn==2.6.3" in said
    assert "transformer_engine[pytorch]>=2.0" in said  # the first TE whose max is 2.7.3
    assert "NVTE_FLASH_ATTN=0" in said


def test_the_assert_of_te_1_7_to_2_1_with_the_stated_flash_attn(matrix: Matrix) -> None:
    text = ("transformer_engine 1.9.0\nflash-attn 2.6.3\n"
            "AssertionError: FlashAttention maximum version 2.5.8 is supported.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "2.6.3 is installed" in top.message and "@v1.9:" in top.message
    assert "flash-attn==2.5.8" in _said(top)


def test_a_minimum_names_the_floor(matrix: Matrix) -> None:
    text = "AssertionError: FlashAttention minimum version 2.0.6 is required.\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "flash-attn>=2.0.6" in _said(top)


def test_te_before_1_12_without_flash_attn_names_the_release_that_made_it_optional(
        matrix: Matrix) -> None:
    text = ('  File "/venv/lib/python3.8/site-packages/transformer_engine/pytorch/attention.py", '
            "line 74, in <module>\n"
            '    _flash_attn_version = PkgVersion(get_pkg_version("flash-attn"))\n'
            "importlib.metadata.PackageNotFoundError: flash-attn\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED
    assert "optional from 1.12" in top.message  # the first tag whose read is under try:
    assert "transformer_engine[pytorch]>=1.12" in _said(top)


def test_the_stated_te_release_pins_its_newest_flash_attn(matrix: Matrix) -> None:
    text = ("transformer-engine==1.9.0\n"
            "  File \"/venv/lib/python3.10/site-packages/transformer_engine/__init__.py\"\n"
            "importlib.metadata.PackageNotFoundError: No package metadata was found for "
            "flash-attn\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED
    assert "flash-attn==2.5.8" in _said(top)
