"""The parent's reading of the worker's records: only a well-formed record with this worker's
token is one; anything else on the channel is output of the target."""

from __future__ import annotations

import json

import pytest

from fadoctor.probes.protocol import Event, decode, new_token

TOKEN = new_token()


def line(record: object, token: str = TOKEN) -> bytes:
    return f"{token} {json.dumps(record)}".encode()


def test_a_record_with_the_token_is_decoded() -> None:
    assert decode(line({"event": "start", "stage": "fa2"}), TOKEN) == Event("start", "fa2")
    hello = decode(line({"event": "hello", "python": [3, 8, 18]}), TOKEN)
    assert hello is not None and hello.python == (3, 8, 18)
    result = decode(line({"event": "result", "stage": "host", "ok": True, "data": {"a": 1}}),
                    TOKEN)
    assert result == Event("result", "host", ok=True, data={"a": 1})


@pytest.mark.parametrize("raw", [
    b"garbage", b"", b'{"event": "done"}', line({"event": "done"}, token=new_token()),
    line({"event": "done"}, token=TOKEN[:-1]), TOKEN.encode() + b" {not json",
    TOKEN.encode() + b" \xff\xfe", line(["event", "done"]), line({"event": "shutdown"}),
    line({"event": "result", "stage": 3}), line({"event": "result", "stage": "x", "data": []}),
    line({"event": "result", "stage": "x", "failure": "boom"}),
    TOKEN.encode() + b" " + b"[" * 100_000,
])
def test_anything_else_is_not_a_record(raw: bytes) -> None:
    assert decode(raw, TOKEN) is None


def test_ok_is_true_only_when_it_says_true() -> None:
    event = decode(line({"event": "result", "stage": "x", "ok": "yes"}), TOKEN)
    assert event is not None and event.ok is False
    assert len({new_token() for _ in range(100)}) == 100
