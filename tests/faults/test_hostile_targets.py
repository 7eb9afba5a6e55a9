"""Hostile targets, made for real: distributions written by hand (as any installer but pip can
write them) whose names, versions and import errors carry shell syntax, terminal escapes, markup
and undecodable bytes. Each is probed (`snapshot`, a real torch import), then diagnosed in every
format; the examined environment is fingerprinted around every run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Dict, List

import pytest
from tests.faults.conftest import (
    assert_every_format_holds,
    assert_harmless,
    assert_inert,
    base_environ,
    commands_of,
    dist_info,
    examined,
    fadoctor,
    unchanged,
)
from tests.helpers.broken import C10_ERROR_OLD_ABI, requires_torch

pytestmark = [requires_torch, pytest.mark.slow]

ABI_ERROR = f"undefined symbol: {C10_ERROR_OLD_ABI}"


def meta(name: str, version: str, extra: bytes = b"") -> bytes:
    return (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(
        "utf-8", "surrogateescape") + extra)


def failing_flash_attn(site: Path, version: str, message: str) -> None:
    """flash-attn `version` whose import raises ImportError(message)."""
    body = f"raise ImportError({message!r})\n".encode("utf-8", "surrogateescape")
    dist_info(site, "flash_attn-2.5.5.dist-info", meta("flash-attn", version),
              {"flash_attn/__init__.py": body})


def shell_syntax(site: Path) -> None:
    for n in (1, 2):  # installed twice: FAD107 offers to uninstall one
        dist_info(site, f"nvidia_x-{n}.0.dist-info", meta("nvidia-x; touch pwned", f"{n}.0"))
    failing_flash_attn(site, '2.5.5"; touch pwned; echo "$(touch pwned)`touch pwned`', ABI_ERROR)


def terminal_escapes(site: Path) -> None:
    for n in (1, 2):
        dist_info(site, f"nvidia_y-{n}.0.dist-info",
                  meta("nvidia-\x1b[5mblink\x1b]0;owned\x07", f"{n}.0"))
    failing_flash_attn(site, "2.6.3\x1b[2J\x1b]8;;https://example.invalid\x07link\x1b]8;;\x07",
                       f"{ABI_ERROR} \x1b[31mred\x1b[0m \x9b1m \u202egnp.exe\r\x08\x00")


def markup(site: Path) -> None:
    failing_flash_attn(site, "2.6.3", "</details><img src=x onerror=alert(1)> [a](javascript:x) "
                       "`code` <!-- ]]> &amp; | cell\n::error title=forged::owned\n%0A::warning::x")


def undecodable(site: Path) -> None:
    for n in (1, 2):
        dist_info(site, f"nvidia_z-{n}.0.dist-info", meta("nvidia-z\udcff", f"{n}.0"))
    failing_flash_attn(site, "2.6.3", "libcudart.so.11.0: cannot open shared object file "
                       "\udcff\udcfe in /opt/caf\udce9")


CASES: Dict[str, Callable[[Path], None]] = {
    "shell-syntax": shell_syntax, "terminal-escapes": terminal_escapes, "markup": markup,
    "undecodable-bytes": undecodable,
}


def findings(report: Dict[str, object], check_id: str) -> List[Dict[str, object]]:
    checks = report["checks"]
    assert isinstance(checks, list)
    return next(c["findings"] for c in checks if c["id"] == check_id)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_target_is_diagnosed_inertly_and_left_as_it_was(tmp_path: Path, case: str
                                                                 ) -> None:
    site = tmp_path / os.fsdecode(b"site-\xff\xfe")  # the folder's own name is not UTF-8
    CASES[case](site)
    env = base_environ(PYTHONPATH=str(site))
    facts = tmp_path / "facts.json"
    with unchanged(*examined(site)):
        run = fadoctor("snapshot", "-o", str(facts), env=env)
    assert run.code == 0 and run.err == b"", run
    outputs = assert_every_format_holds(facts, tmp_path / "sandbox")
    report = json.loads(outputs["json"])
    # The import failure is reported (and diagnosed from its text), never a crash of a check.
    assert all(f["category"] != "internal" for c in report["checks"] for f in c["findings"])
    assert findings(report, "FAD111")[0]["severity"] == "error"


def test_unsafe_values_never_reach_a_command_and_the_remedy_says_why(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shell_syntax(site)
    with unchanged(*examined(site)):
        run = fadoctor("check", "--format", "json", env=base_environ(PYTHONPATH=str(site)))
    report = json.loads(run.text)
    duplicate = findings(report, "FAD107")[0]
    assert duplicate["remedies"][0]["commands"] == []  # type: ignore[index]
    assert "is not a valid distribution name" in duplicate["remedies"][0]["summary"]  # type: ignore[index]
    reinstall = [r for f in findings(report, "FAD111") for r in f["remedies"]  # type: ignore[attr-defined]
                 if "Reinstall" in r["summary"]]
    assert reinstall and all(r["commands"] == [] and "is not a valid version (PEP 440)"
                             in r["summary"] for r in reinstall)
    # The remedies that take no value from the target are still there (the SDPA fallback).
    assert any(r["code"] for f in findings(report, "FAD111") for r in f["remedies"])  # type: ignore[attr-defined]
    assert_harmless(commands_of(report), tmp_path / "sandbox")
    assert not list(tmp_path.rglob("pwned"))


def test_text_output_escapes_what_the_terminal_would_obey(tmp_path: Path) -> None:
    site = tmp_path / "site"
    terminal_escapes(site)
    with unchanged(*examined(site)):
        run = fadoctor("check", "-v", env=base_environ(PYTHONPATH=str(site)))
    assert run.code == 1
    assert_inert(run.text)
    assert "\\x1b[31mred" in run.text and "\\u202egnp.exe" in run.text
