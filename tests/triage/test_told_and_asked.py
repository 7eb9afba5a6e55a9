"""What a report tells apart from what it asks: an exception quoted inline in prose is read as
raised; a line that tells ("Install FA3 from ToT. Run the test.") is not a question about a GPU;
and a torch custom op's unknown keyword is the API table's, as Python's own wording is."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.errors import read_errors
from fadoctor.triage.observed import Observed
from fadoctor.triage.text import split


def test_an_exception_in_backticks_is_raised() -> None:
    seen = Observed()
    read_errors(split("The tests fail with `RuntimeError: Unknown keyword argument 'window_size' "
                      "for operator 'x::y'.` error.\n"), seen)
    assert [(r.kind, r.message[:26]) for r in seen.raised] == [("RuntimeError",
                                                               "Unknown keyword argument '")]


def test_short_code_in_backticks_is_not_an_exception() -> None:
    seen = Observed()
    read_errors(split("set `ValueError: x` aside\n"), seen)
    assert seen.raised == []


def test_a_told_line_on_a_hopper_gpu_is_not_a_question(matrix: Matrix) -> None:
    result = triage("FA3 fails in the newest version\nInstall FA3 from ToT. Run the test.\n"
                    "Device: H100\n", matrix)
    assert all(d.category != Category.INFO or "FlashAttention-3 is built" not in d.message
               for d in result.diagnosis)


def test_a_question_is_still_answered(matrix: Matrix) -> None:
    found = top("Does FlashAttention-3 run on the H100?\n", matrix)
    assert found.category == Category.INFO


def test_a_custom_ops_unknown_keyword_is_read_against_the_api_table(matrix: Matrix) -> None:
    found = top("RuntimeError: Unknown keyword argument 'window_size' for operator "
                "'flash_attn::_flash_attn_forward'.\n", matrix)
    last = max(rel.version for rel in matrix.flash_attn_releases
               if rel.version.release[:2] == (2, 6))
    assert found.category == Category.VERSION_CONFLICT and f"flash-attn=={last}" in said(found)


def test_a_bare_assertion_under_frames_is_raised_with_its_source_line() -> None:
    seen = Observed()
    read_errors(split('  File "flash_attn/cute/flash_fwd_sm100.py", line 132, in __init__\n'
                      "    assert self.tmem_total <= SM100_TMEM_CAPACITY_COLUMNS\n"
                      "AssertionError\n"), seen)
    assert [(r.kind, r.message) for r in seen.raised] == [
        ("AssertionError", "assert self.tmem_total <= SM100_TMEM_CAPACITY_COLUMNS")]
    assert seen.raised[0].frames == ["flash_attn/cute/flash_fwd_sm100.py"]


def test_a_bare_class_name_in_prose_is_not_raised() -> None:
    seen = Observed()
    read_errors(split("We saw a ValueError\nValueError\n"), seen)
    assert seen.raised == []


def test_a_bare_assertion_skips_pythons_caret_markers() -> None:
    seen = Observed()
    read_errors(split('  File "x/cute/y.py", line 1, in f\n    assert a <= b\n           ^^^^^^\n'
                      "AssertionError\n"), seen)
    assert seen.raised[0].message == "assert a <= b"


def test_an_exception_told_as_past_is_not_raised() -> None:
    seen = Observed()
    read_errors(split("Previously I got `RuntimeError: CUDA error: no kernel image is available` "
                      "but now it's fine\n"), seen)
    assert seen.raised == []


def test_an_exception_after_it_worked_before_is_raised() -> None:
    seen = Observed()
    read_errors(split("It worked before, now it fails with `RuntimeError: CUDA error: no kernel "
                      "image is available`\n"), seen)
    assert [r.kind for r in seen.raised] == ["RuntimeError"]
