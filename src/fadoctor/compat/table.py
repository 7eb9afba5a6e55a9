"""The table people look for: torch down, flash-attention across, a cell per combination that
ran (✓ works, ✗ fails with the reason, an en dash: not run), as text, Markdown or JSON. Pure."""

import json
from typing import Dict, List, Tuple

from fadoctor.compat.model import CompatFile, Record
from fadoctor.safety.inert import one_line

NONE = "none"  # the column of combinations without flash-attention


def cells(data: CompatFile) -> Tuple[List[str], List[str], Dict[Tuple[str, str], List[Record]]]:
    """(rows, columns, records by cell)."""
    grid: Dict[Tuple[str, str], List[Record]] = {}
    for record in data.records:
        grid.setdefault((_row(record), _column(record)), []).append(record)
    rows = sorted({r for r, _ in grid}, key=_version_key)
    columns = sorted({c for _, c in grid}, key=lambda c: (c != NONE, c))
    return rows, columns, grid


def text(data: CompatFile) -> str:
    return _render(data, markdown=False)


def markdown(data: CompatFile) -> str:
    return _render(data, markdown=True)


def as_json(data: CompatFile) -> str:
    rows, columns, grid = cells(data)
    table = {row: {col: _cell_data(grid[(row, col)]) for col in columns if (row, col) in grid}
             for row in rows}
    return json.dumps({"rows": rows, "columns": columns, "cells": table}, indent=2) + "\n"


def _render(data: CompatFile, markdown: bool) -> str:
    rows, columns, grid = cells(data)
    if not rows:
        return "no combinations recorded\n"
    header = ["torch", *columns]
    body = [[row, *(_cell(grid.get((row, col), [])) for col in columns)] for row in rows]
    notes = [f"{row} with {col}: {one_line(r.reason or '')}" for row in rows for col in columns
             for r in grid.get((row, col), []) if r.verdict == "fails"]
    if markdown:
        lines = ["| " + " | ".join(_md(h) for h in header) + " |",
                 "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(_md(c) for c in line) + " |" for line in body]
        lines += ["", *(f"- {_md(n)}" for n in notes)] if notes else []
        return "\n".join(lines) + "\n"
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
             for line in [header, *body]]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def _row(record: Record) -> str:
    return one_line(record.combination.torch or "torch unknown")


def _column(record: Record) -> str:
    c = record.combination
    name = NONE if c.family is None else f"{c.family_distribution or c.family} {c.family_version or '?'}"
    return one_line(" + ".join([name, *c.extras]))


def _cell(records: List[Record]) -> str:
    if not records:
        return "–"  # noqa: RUF001 (an en dash: the not-run cell of the table people know)
    failed = sum(r.verdict == "fails" for r in records)
    mark = "✗" if failed else "✓"
    return mark if len(records) == 1 else f"{mark} {len(records) - failed}/{len(records)}"


def _cell_data(records: List[Record]) -> Dict[str, object]:
    return {"verdict": "fails" if any(r.verdict == "fails" for r in records) else "works",
            "runs": len(records),
            "reasons": sorted({r.reason for r in records if r.reason}),
            "where": sorted({r.runner for r in records if r.runner}),
            "bench": [{"target": b.target, "fwd_ms": b.fwd.median_ms if b.fwd else None,
                       "fwd_bwd_ms": b.fwd_bwd.median_ms if b.fwd_bwd else None,
                       "shape": r.bench_shape, "where": r.runner}
                      for r in records for b in r.bench if b.status == "timed"]}


def _md(text: str) -> str:
    return one_line(text).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`") \
        .replace("[", "\\[").replace("<", "&lt;")


def _version_key(row: str) -> Tuple[Tuple[int, ...], str]:
    head = row.split("+")[0]
    try:
        return tuple(int(p) for p in head.split(".")), row
    except ValueError:
        return (), row
