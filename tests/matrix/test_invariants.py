"""Broken copies of the shipped matrix: every invariant fails with a line that names the entry."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from fadoctor.errors import InputError
from fadoctor.matrix import load_matrix

Raw = Dict[str, Any]
Find = Callable[[Raw, str], Raw]


def _asset_not_a_local_version(raw: Raw, rel: Find) -> None:
    rel(raw, "2.8.3")["assets"]["cu12torch2.8abiTRUE"] = ["cp310"]


def _asset_torch_not_in_wheel_torch(raw: Raw, rel: Find) -> None:
    r = rel(raw, "2.8.3")
    r["assets"]["cu12torch2.9cxx11abiTRUE"] = ["cp310"]
    r["built_against"]["cu12torch2.9"] = "cu128"


def _python_tags_disagree(raw: Raw, rel: Find) -> None:
    rel(raw, "2.8.3")["wheel_python"].remove("3.13")


def _built_against_misses_a_key(raw: Raw, rel: Find) -> None:
    del rel(raw, "2.8.3")["built_against"]["cu12torch2.6"]


def _built_against_an_unknown_variant(raw: Raw, rel: Find) -> None:
    rel(raw, "2.8.3")["built_against"]["cu12torch2.6"] = "cu125"


def _built_against_a_torch_not_in_the_matrix(raw: Raw, rel: Find) -> None:
    raw["torch_releases"] = [t for t in raw["torch_releases"] if t["minor"] != "2.4"]


def _cu_tag_the_rule_never_asks_for(raw: Raw, rel: Find) -> None:
    r = rel(raw, "2.8.3")
    r["assets"]["cu13torch2.8cxx11abiTRUE"] = r["assets"].pop("cu12torch2.8cxx11abiTRUE")


def _legacy_name_in_a_modern_release(raw: Raw, rel: Find) -> None:
    rel(raw, "2.8.3")["assets"]["cu121torch2.8.0"] = ["cp310"]


def _wheel_torch_without_assets(raw: Raw, rel: Find) -> None:
    rel(raw, "2.8.3")["wheel_torch"].append("2.9")


def _not_built_without_a_reason(raw: Raw, rel: Find) -> None:
    del rel(raw, "2.7.1")["not_built_reason"]


def _nightly_not_listed(raw: Raw, rel: Find) -> None:
    rel(raw, "2.7.1.post1")["wheel_torch_nightlies"] = []


def _not_an_arch(raw: Raw, rel: Find) -> None:
    rel(raw, "2.8.3")["archs"] = ["sm90"]


def _archs_by_cuda_without_assets(raw: Raw, rel: Find) -> None:
    rel(raw, "2.8.3")["archs_by_cuda"] = {"cu11": ["sm_80"]}


def _empty_archs_source(raw: Raw, rel: Find) -> None:
    rel(raw, "2.8.3")["archs_source"] = " "


def _releases_out_of_order(raw: Raw, rel: Find) -> None:
    fa = raw["flash_attn_releases"]
    fa[-1], fa[-2] = fa[-2], fa[-1]


def _abi1_false_wheel_without_a_defect(raw: Raw, rel: Find) -> None:
    raw["known_defects"] = [d for d in raw["known_defects"]
                            if d["category"] != "cxx11_abi_mismatch"]


def _defect_for_no_release(raw: Raw, rel: Find) -> None:
    raw["known_defects"][0]["versions"] = "==9.9"


def _duplicate_defect(raw: Raw, rel: Find) -> None:
    raw["known_defects"].append(copy.deepcopy(raw["known_defects"][1]))


def _defect_outside_the_vocabulary(raw: Raw, rel: Find) -> None:
    raw["known_defects"][2]["category"] = "bad_luck"


def _defect_without_a_remedy(raw: Raw, rel: Find) -> None:
    raw["known_defects"][3]["remedy"] = ""


def _gpu_pattern_shadows_the_others(raw: Raw, rel: Find) -> None:
    raw["gpus"].append({"name": "Anything", "pattern": ".*", "cc": "1.0", "source": "a test"})


def _gpu_peaks_without_a_datasheet(raw: Raw, rel: Find) -> None:
    raw["gpus"][0]["dense_bf16_tflops"] = 1.0


def _sdpa_ranges_overlap(raw: Raw, rel: Find) -> None:
    raw["sdpa_backends"].append(dict(raw["sdpa_backends"][5], torch=">=2.7,<2.9"))


def _arch_list_of_no_variant(raw: Raw, rel: Find) -> None:
    torch = next(t for t in raw["torch_releases"] if t["minor"] == "2.6")
    torch["arch_lists_unverified"] = ["cu999"]


def _toolkits_out_of_order(raw: Raw, rel: Find) -> None:
    kits = raw["cuda_driver"]["toolkits"]
    kits[0], kits[1] = kits[1], kits[0]


def _fa4_duplicate(raw: Raw, rel: Find) -> None:
    raw["fa4_releases"].append(copy.deepcopy(raw["fa4_releases"][-1]))


def _rocm_backend_unknown(raw: Raw, rel: Find) -> None:
    raw["rocm_backends"][0]["backend"] = "cuda"


@pytest.mark.parametrize(("breaks", "names"), [
    (_asset_not_a_local_version, ["flash-attn 2.8.3", "'cu12torch2.8abiTRUE' is not of the form"]),
    (_asset_torch_not_in_wheel_torch, ["flash-attn 2.8.3", "torch 2.9, not in wheel_torch"]),
    (_python_tags_disagree, ["flash-attn 2.8.3", "do not match wheel_python"]),
    (_built_against_misses_a_key, ["flash-attn 2.8.3", "built_against keys"]),
    (_built_against_an_unknown_variant, ["flash-attn 2.8.3", "torch 2.6+cu125, not a variant"]),
    (_built_against_a_torch_not_in_the_matrix, ["flash-attn 2.8.3", "torch 2.4, which "
                                                "torch_releases lacks"]),
    (_cu_tag_the_rule_never_asks_for, ["flash-attn 2.8.3", "major_12 rule never asks for cu13"]),
    (_legacy_name_in_a_modern_release, ["flash-attn 2.8.3", "'cu121torch2.8.0' is not of the form"]),
    (_wheel_torch_without_assets, ["flash-attn 2.8.3", "['2.9'] has neither assets"]),
    (_not_built_without_a_reason, ["flash-attn 2.7.1", "not_built and not_built_reason"]),
    (_nightly_not_listed, ["flash-attn 2.7.1.post1", "nightly torch 2.6.0.dev20241010"]),
    (_not_an_arch, ["flash-attn 2.8.3", "'sm90' is not an arch name"]),
    (_archs_by_cuda_without_assets, ["flash-attn 2.8.3", "archs_by_cuda names cu11"]),
    (_empty_archs_source, ["archs_source", "non-empty source"]),
    (_releases_out_of_order, ["flash_attn_releases: '2.8.3.post1' comes after '2.8.3.post2'"]),
    (_abi1_false_wheel_without_a_defect, ["flash-attn 2.8.3: cu12torch2.6cxx11abiFALSE was "
                                          "compiled against an ABI-1 torch"]),
    (_defect_for_no_release, ["known_defects 'glibc-2.32-wheels'", "match no fa2 release"]),
    (_duplicate_defect, ["known_defects: duplicate entry 'cxx11abi-false-wheels-built-with-abi1'"]),
    (_defect_outside_the_vocabulary, ["known_defects.2.category (id=fatbin-compression-needs-"
                                      "driver-550)", "Input should be"]),
    (_defect_without_a_remedy, ["defect 'no-sm90-kernels-in-2.2.4'", "must not be empty"]),
    (_gpu_pattern_shadows_the_others, ["gpus: 'H100' resolves to nothing"]),
    (_gpu_peaks_without_a_datasheet, ["gpu 'GB10'", "need a tflops_source"]),
    (_sdpa_ranges_overlap, ["sdpa_backends: flash has 2 ranges for torch 2.7"]),
    (_arch_list_of_no_variant, ["torch 2.6: arch_lists_unverified names ['cu999']"]),
    (_toolkits_out_of_order, ["cuda_driver.toolkits: '9.0' comes after '9.1'"]),
    (_fa4_duplicate, ["fa4_releases: duplicate entry '4.0.0b36'"]),
    (_rocm_backend_unknown, ["rocm_backends.0.backend (backend=cuda)"]),
])
def test_a_broken_copy_names_the_entry(fresh: Raw, release_in: Find,
                                       lint_copy: Callable[[Raw], List[str]],
                                       breaks: Callable[[Raw, Find], None], names: List[str]) -> None:
    breaks(fresh, release_in)
    problems = lint_copy(fresh)
    assert any(all(fragment in line for fragment in names) for line in problems), problems
    assert all("\n" not in line for line in problems)


def test_lint_reports_every_problem_not_just_the_first(
        fresh: Raw, release_in: Find, lint_copy: Callable[[Raw], List[str]]) -> None:
    _built_against_an_unknown_variant(fresh, release_in)
    _defect_for_no_release(fresh, release_in)
    _toolkits_out_of_order(fresh, release_in)
    problems = lint_copy(fresh)
    assert len(problems) == 3, problems
    assert all(line.startswith("(top level): ") for line in problems)


def test_the_loader_refuses_what_lint_reports(fresh: Raw, release_in: Find,
                                              write_copy: Callable[[Raw], Path]) -> None:
    _built_against_an_unknown_variant(fresh, release_in)
    _toolkits_out_of_order(fresh, release_in)
    path = write_copy(fresh)
    with pytest.raises(InputError) as caught:
        load_matrix(path)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"matrix {path} is invalid (2 problems):"
    assert lines[1] == ("  (top level): cuda_driver.toolkits: '9.0' comes after '9.1'; keep the "
                        "section in ascending order")
    assert lines[2].startswith("  (top level): flash-attn 2.8.3: ") and "cu125" in lines[2]
    assert caught.value.problems == tuple(line.strip() for line in lines[1:])


def test_entry_errors_in_several_releases_are_all_reported(
        fresh: Raw, release_in: Find, lint_copy: Callable[[Raw], List[str]]) -> None:
    at = {r["version"]: i for i, r in enumerate(fresh["flash_attn_releases"])}
    for version in ("2.8.2", "2.8.3"):
        release_in(fresh, version)["archs"] = ["sm90"]
    problems = lint_copy(fresh)
    assert [p.split(": ")[:2] for p in problems] == [
        [f"flash_attn_releases.{at['2.8.2']}", "flash-attn 2.8.2"],
        [f"flash_attn_releases.{at['2.8.3']}", "flash-attn 2.8.3"]]
