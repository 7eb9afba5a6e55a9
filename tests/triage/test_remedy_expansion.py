"""No remedy command of fadoctor's own relies on the shell expanding a variable: commands are
shown quoted word by word (safety.shell), so `export PATH=/usr/local/cuda/bin:$PATH` would reach
the user as `export PATH='/usr/local/cuda/bin:$PATH'` and set PATH to a literal "$PATH". Every
real report is triaged and every command checked; a `$NAME` the report itself holds may be quoted
(that is the report's text, kept inert); PowerShell's `$env:NAME = "value"` sets one."""

from __future__ import annotations

import re
from pathlib import Path

from fadoctor.matrix import Matrix
from fadoctor.triage.diagnose import triage

REPORTS = sorted((Path(__file__).resolve().parents[1] / "fixtures").glob("*/*/report.txt"))
_EXPANSION = re.compile(r"\$(?!env:)\{?[A-Za-z_][A-Za-z0-9_]*|\$\(")


def test_no_command_of_ours_needs_expansion(matrix: Matrix) -> None:
    assert len(REPORTS) > 1500
    bad = []
    for path in REPORTS:
        raw = path.read_bytes()
        text = raw.decode("utf-8", "replace")
        for finding in triage(raw, matrix).diagnosis:
            for remedy in finding.remedies:
                for line in remedy.commands:
                    for found in _EXPANSION.finditer(line):
                        if found.group(0) not in text:
                            bad.append(f"{path.parent.name}: {line}")
    assert bad == []
