"""Text from the examined environment made inert: every unprintable character becomes a visible
escape, whatever the text, and a model's every string with it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from fadoctor.report import Remedy
from fadoctor.safety.inert import inert, one_line, visible


def test_escapes_are_visible_and_name_the_character() -> None:
    assert visible("a\x1b[31mb\x07") == "a\\x1b[31mb\\x07"
    assert visible("caf\udce9") == "caf\\xe9"  # a Latin-1 byte kept by surrogateescape
    assert visible("\u202egnp.exe\x9b") == "\\u202egnp.exe\\x9b"
    assert visible("two\nlines\tkept") == "two\nlines\tkept"
    assert one_line("two\nlines\r") == "two\\x0alines\\x0d"
    assert visible("héllo ✓ 日本") == "héllo ✓ 日本"  # printable text is left alone


@given(st.text())
def test_any_text_becomes_printable_utf8_and_xml(text: str) -> None:
    shown = visible(text)
    assert all(ch.isprintable() or ch in "\n\t" for ch in shown)
    shown.encode("utf-8")  # no lone surrogate left
    ET.fromstring(f"<a>{shown.replace('&', '&amp;').replace('<', '&lt;')}</a>")
    assert one_line(text).isprintable()


def test_a_model_is_made_inert_keys_and_all() -> None:
    remedy = Remedy(summary="fix \x1b]0;t\x07", code="x = '\udcff'\n")
    assert inert(remedy) == Remedy(summary="fix \\x1b]0;t\\x07", code="x = '\\xff'\n")
