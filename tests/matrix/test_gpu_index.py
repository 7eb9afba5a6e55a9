"""resolve_gpu's index (entries grouped by the word every spelling of their name holds) answers
what asking each entry's own match_length in the table's order answers, for every line of the
real reports that names a GPU word and for every entry's own name."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from fadoctor.matrix import Matrix
from fadoctor.matrix.hardware import GpuSpec, resolve_gpu

REPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "reports"


def _reference(gpus: List[GpuSpec], device: str) -> Optional[GpuSpec]:
    lower = device.lower()
    scored = [(n, g) for g in gpus if (n := g.match_length(device, lower)) is not None]
    if not scored:
        return None
    best = max(n for n, _ in scored)
    top = [g for n, g in scored if n == best]
    return top[0] if len({g.cc for g in top}) == 1 else None


def test_the_index_answers_as_every_entry_would(matrix: Matrix) -> None:
    words = ("nvidia", "rtx", "gtx", "tesla", "quadro", "jetson", "a100", "h100", "v100", "t4",
             "l4", "b200", "gb10", "titan")
    lines = [g.name for g in matrix.gpus]
    for report in sorted(REPORTS.glob("*/report.txt")):
        lines += [line[:400] for line in report.read_text(encoding="utf-8", errors="replace")
                  .splitlines() if any(w in line.lower() for w in words)]
    assert len(lines) > 1000
    for line in lines:
        assert resolve_gpu(matrix.gpus, line) is _reference(matrix.gpus, line), line
