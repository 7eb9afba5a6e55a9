"""The message catalog (data/messages.yaml): re-derived offline from the messages recorded from
flash-attention at every release tag (C++ API, setup.py, interfaces, hopper/, flash_attn/cute/),
covering each of them, and each entry's printed form gets its category from triage; the
real-report fixtures keep their URL split."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Tuple

import pytest
import yaml

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_catalog import entries

ROOT = Path(__file__).resolve().parents[2]
EXCERPTS = ROOT / "tests" / "fixtures" / "messages_excerpts.yaml"
WRAPPED = ROOT / "tests" / "fixtures" / "wrapper_excerpts.yaml"
REPORTS = ROOT / "tests" / "fixtures" / "reports"


def _tool(name: str) -> ModuleType:
    if str(ROOT / "tools") not in sys.path:  # the tools import their shared helpers by name
        sys.path.insert(0, str(ROOT / "tools"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recorded() -> Dict[str, List[Tuple[str, str, int, str]]]:
    found: Dict[str, List[Tuple[str, str, int, str]]] = _tool("gen_messages").read_excerpts(EXCERPTS)
    return found


def test_the_catalog_is_what_the_generator_derives(recorded: Dict[str, List[Tuple[str, str, int, str]]]
                                                   ) -> None:
    rendered = _tool("gen_messages").render(recorded, _tool("wrapper_sources").load(WRAPPED))
    assert rendered == (ROOT / "data" / "messages.yaml").read_text(encoding="utf-8")


def test_every_environment_check_at_every_tag_is_catalogued(
        recorded: Dict[str, List[Tuple[str, str, int, str]]]) -> None:
    order = _tool("gen_messages").order
    by_text = {(e.source, e.printed): e for e in entries()}
    # the 97 release tags v0.2.1 .. v2.8.3.post1 and the 27 fa4-v4.0.0.beta0 .. beta27
    assert len(recorded) >= 120
    assert {s for rows in recorded.values() for s, *_ in rows} >= {
        "fa-csrc", "fa-setup", "fa3", "fa3-py", "fa4", "fa4-import"}
    missing = []
    for tag, rows in recorded.items():
        for source, path, line, printed in rows:
            entry = by_text.get((source, printed))
            if entry is None or not order(entry.first) <= order(tag) <= order(entry.last):
                missing.append(f"{tag}:{path}:{line}: {printed}")
    assert missing == []


_CAPTURE = re.compile(r"\(\?P<\w+>(?:\[\^\\n\]\{1,120\}\?|\\S\{1,80\})\)")


_PREFACE = re.compile(r"\(\?:[^()]*\)\?")


def _example(printed: str) -> str:
    """The printed form with each placeholder given a value."""
    return re.sub(r"\{\w+\}", "121", printed)


def test_patterns_are_bounded() -> None:
    """Literal words joined by a bounded gap; the only groups are placeholder captures of a
    bounded character run, and an optional preface of literal words (transformers'), so no
    unbounded quantifier is nested in another. The printed form matches, and so does the part
    after an optional preface alone (a report that quotes only that)."""
    for entry in entries():
        # (a printed form ending in a number gets a lookahead: the number ends there)
        pattern = entry.pattern.pattern.removesuffix(r"(?!\.?\d)")
        rest = _CAPTURE.sub("", _PREFACE.sub("", pattern))
        assert "(" not in rest.replace(r"\(", ""), entry.id
        assert entry.pattern.search(_example(entry.printed)), entry.id
        preface = _PREFACE.match(entry.pattern.pattern)
        if preface is not None:  # transformers' lead-in, or torch's "CUDA error: " (cudart)
            bare = re.split(r" due to the following error: |^CUDA error: ",
                            _example(entry.printed), maxsplit=1)[1]
            assert entry.pattern.search(bare) or entry.pattern.search(bare[0].lower() + bare[1:]), \
                entry.id


def test_every_wrapper_message_at_every_tag_is_catalogued() -> None:
    """xformers' flash-attn check, read at each of its release tags: every recorded printed form
    is an entry whose release range holds the tag, and each accepted range is kept."""
    ws = _tool("wrapper_sources")
    recorded = ws.load(WRAPPED)["xformers"]
    tags = recorded["tags"]
    assert tags[0] == "v0.0.2" and tags[-1] == "v0.0.35" and len(tags) >= 50
    by_text = {e.printed: e for e in entries() if e.source == "xformers"}
    for _, line, printed, runs in recorded["rows"]:
        entry = by_text[printed]
        for tag in ws.ex.tags_in_runs(tags, runs):
            assert ws.order(entry.first) <= ws.order(tag) <= ws.order(entry.last), (tag, line)
    accepts = {a for e in by_text.values() for a in e.accepts}
    assert {(low, high) for _, _, low, high in accepts} == {
        (low, high) for low, high, _ in recorded["accepts"]}
    assert ("v0.0.30", "v0.0.30", "2.7.1", "2.7.4") in accepts


def test_xformers_range_gets_the_pinned_release_and_an_accepting_xformers(matrix: Matrix) -> None:
    text = ("GPU 0: NVIDIA GeForce RTX 4090\nImportError: Requires Flash-Attention version "
            ">=2.7.1,<=2.7.4 but got 2.8.0.post2.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    commands = [c for r in top.remedies for c in r.commands]
    assert "python -m pip install flash-attn==2.7.4 --no-build-isolation" in commands
    # the newest release whose check accepts 2.8.0.post2: v0.0.35 (>=2.7.1,<=2.8.4)
    assert any("xformers==0.0.35" in c for c in commands)


def test_every_vllm_flash_attn_gate_at_every_commit_is_catalogued() -> None:
    """vllm_flash_attn's FA version gates, read at each commit of the fork's main that changes
    flash_attn_interface.py (its release tags predate them): each recorded reason is an entry
    whose range holds the commit."""
    ws = _tool("wrapper_sources")
    recorded = ws.load(WRAPPED)["vllm-fa"]
    tags = [str(t) for t in recorded["tags"]]
    assert len(tags) >= 19
    by_text = {e.printed: e for e in entries() if e.source == "vllm-fa"}
    assert any("excluding 8.6 and 8.9 and Blackwell" in p for p in by_text)
    for _, line, printed, runs in recorded["rows"]:
        entry = by_text[printed]
        for tag in ws.ex.tags_in_runs(tags, runs):
            assert tags.index(entry.first) <= tags.index(tag) <= tags.index(entry.last), (tag, line)


def test_vllm_fa3_gate_on_ada_forces_fa2_before_sdpa(matrix: Matrix) -> None:
    text = ("GPU 0: NVIDIA GeForce RTX 4090\nERROR Cannot use FA version 3 is not supported due to "
            "FA3 is only supported on devices with compute capability >= 8 excluding 8.6 and 8.9 "
            "and Blackwell archs (>=10)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    # The Blackwell wording, not the older text it starts with: the longest printed form wins.
    [blackwell] = [e for e in entries() if e.source == "vllm-fa" and "Blackwell" in e.printed
                   and e.printed.startswith("FA3")]
    assert top.evidence["catalog"] == blackwell.id
    assert top.remedies[0].commands == ["export VLLM_FLASH_ATTN_VERSION=2"]
    assert "sdpa" in " ".join(r.summary for r in top.remedies[1:]).lower()


@pytest.mark.parametrize("entry", entries(), ids=[e.id for e in entries()])
def test_each_printed_form_gets_its_category(entry: object, matrix: Matrix) -> None:
    from fadoctor.triage.mech_catalog import Entry
    assert isinstance(entry, Entry)
    text = ("GPU 0: NVIDIA GeForce RTX 3090\n  File \"flash_attn/flash_attn_interface.py\", line 42,"
            f" in _flash_attn_forward\nRuntimeError: {_example(entry.printed)}\n")
    top = triage(text, matrix).diagnosis[0]
    expected = {entry.category}
    if "is_sm80" in entry.printed:  # 1.x's backward gate for head dim > 64 off the A100
        expected.add(Category.HEAD_DIM_UNSUPPORTED)
    if entry.weight == "defer":  # the hand mechanism decides: this text names flash_attn's
        expected.add(Category.VERSION_CONFLICT)  # files, so it is installed and its import fails
    assert top.category in expected
    assert top.evidence["quoted"] and top.remedies


def test_the_report_split_is_the_url_hash() -> None:
    split = _tool("split_reports").split()
    assert split == yaml.safe_load((REPORTS / "SPLIT.yaml").read_text(encoding="utf-8"))
    assert len(split["development"]) + len(split["held_out"]) >= 60
    for case in (p for p in REPORTS.iterdir() if p.is_dir()):
        expect = yaml.safe_load((case / "expect.yaml").read_text(encoding="utf-8"))
        assert expect["source"].startswith("https://github.com/"), case
        assert Category(expect["category"]) and expect["remedy_any_of"], case


def test_an_fa3_head_size_list_is_named_in_the_remedy(matrix: Matrix) -> None:
    # FA3's literal check (Dao-AILab/flash-attention@v2.6.2:hopper/flash_api.cpp:300)
    top = triage("RuntimeError: Only support head size 64, 128, and 256 for now\n",
                 matrix).diagnosis[0]
    assert top.category == Category.HEAD_DIM_UNSUPPORTED
    assert "head dim 64, 128, and 256 only" in top.remedies[0].summary


def test_the_runtime_string_without_torchs_prefix_is_read(matrix: Matrix) -> None:
    # a program that is not torch prints cudaGetErrorString's text after its own prefix
    text = ("[cudaErrorUnsupportedPtxVersion] the provided PTX was compiled with an unsupported "
            "toolchain. in expression cudaGetLastError()\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.DRIVER_TOO_OLD and "driver" in top.remedies[0].summary


def test_a_message_retyped_in_another_case_without_its_stop_is_read(matrix: Matrix) -> None:
    # flash-attn-4's FP8 gate (fa4-v4.0.0.beta10:flash_attn/cute/interface.py:470), as retyped
    text = ('assert arch // 10 == 10, "FP8 is only supported on SM100 (compute capability 10.x) '
            'for FA4 CuTE"\n')
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "compute capability 1.0" not in top.message  # "10.x" names a family, not a GPU


def test_a_build_without_uneven_head_dims_names_the_flag_and_the_framework_switch(
        matrix: Matrix) -> None:
    text = ('  File "/root/vllm/vllm/attention/backends/flash_attn.py", line 803, in forward\n'
            "RuntimeError: This flash attention build does not support headdim not being a "
            "multiple of 32.\n")
    top = triage(text, matrix).diagnosis[0]
    said = " ".join(r.summary for r in top.remedies)
    assert top.category == Category.HEAD_DIM_UNSUPPORTED
    assert "FLASHATTENTION_DISABLE_UNEVEN_K" in said and "VLLM_ATTENTION_BACKEND" in said
