"""Text from the examined environment made inert: control characters, terminal escape sequences
and undecodable bytes become visible escapes (`\\x1b`, `\\xff`), in strings and in whole models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:  # pydantic loads only where a model is made inert: `--help` stays fast
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

_KEEP = "\n\t"


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str, keep: str = _KEEP) -> str:
    """`text` with every unprintable character (C0 and C1 controls, ESC, BEL, DEL, bidi and other
    format characters, lone surrogates) written as an escape; the characters in `keep` stay."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape(ch) for ch in text)


def one_line(text: str) -> str:
    """`visible`, with line breaks and tabs escaped too: for one-line messages."""
    return visible(text, keep="")


def _walk(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {_walk(k, change): _walk(v, change) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_walk(v, change) for v in value)
    return value


def mapped(model: M, change: Callable[[str], str]) -> M:
    """A copy of `model` with `change` applied to every string (keys too)."""
    return type(model).model_validate(_walk(model.model_dump(mode="python"), change))


def inert(model: M) -> M:
    """A copy of `model` whose every string (keys too) is `visible`."""
    return mapped(model, visible)
