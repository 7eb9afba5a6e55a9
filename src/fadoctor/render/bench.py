"""`fadoctor bench` as text (a table and a bar chart of forward+backward TFLOP/s) or JSON."""

from __future__ import annotations

import io
from typing import List

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fadoctor.bench.run import BenchReport, Row
from fadoctor.safety.inert import inert

BAR_WIDTH = 40


def render_bench_json(report: BenchReport) -> str:
    return report.model_dump_json(indent=2) + "\n"


def render_bench_text(report: BenchReport, width: int = 100, color: bool = False) -> str:
    """The report made inert first (an import error or a worker's failure from the examined
    environment is data), every cell plain text (never rich markup), each note on one line."""
    report = inert(report)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system="standard" if color else None,
                      force_terminal=color, highlight=False, soft_wrap=True, emoji=False)
    gpu = f" on {report.gpu}" if report.gpu else ""
    console.print(Text.assemble(("fadoctor bench: ", "bold"), f"{report.shape.text()}{gpu}"))
    console.print(_table(report))
    timed = [r for r in report.rows if r.status == "timed"]
    if timed:
        console.print(Text("forward+backward TFLOP/s", style="bold"))
        _bars(console, timed)
    _notes(console, report)
    return buffer.getvalue()


def _ms(row: Row, mode: str) -> str:
    timing = row.fwd if mode == "fwd" else row.fwd_bwd
    return f"{timing.median_ms:.3f}" if timing else ""


def _tf(row: Row, mode: str) -> str:
    timing = row.fwd if mode == "fwd" else row.fwd_bwd
    return f"{timing.tflops:.1f}" if timing else ""


def _table(report: BenchReport) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False)
    for column, justify in (("target", "left"), ("fwd ms", "right"), ("fwd TFLOP/s", "right"),
                            ("fwd+bwd ms", "right"), ("fwd+bwd TFLOP/s", "right"),
                            ("of peak", "right"), ("note", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in report.rows:
        peak = f"{row.fraction_of_peak:.0%}" if row.fraction_of_peak is not None else ""
        note = " ".join((row.detail or "").split())
        style = {"timed": "", "failed": "red", "untested": "dim"}[row.status]
        table.add_row(Text(row.name), _ms(row, "fwd"), _tf(row, "fwd"), _ms(row, "fwd_bwd"),
                      _tf(row, "fwd_bwd"), peak, Text(note), style=style)
    return table


def _bars(console: Console, rows: List[Row]) -> None:
    top = max(r.fwd_bwd.tflops for r in rows if r.fwd_bwd) or 1.0
    label = max(len(r.name) for r in rows)
    for row in rows:
        assert row.fwd_bwd is not None
        n = max(1, round(BAR_WIDTH * row.fwd_bwd.tflops / top))
        console.print(Text.assemble(f"  {row.name:<{label}} ", ("█" * n, "green"),
                                    f" {row.fwd_bwd.tflops:.1f}"))


def _notes(console: Console, report: BenchReport) -> None:
    for row in report.rows:
        if row.first_call_s is not None and row.first_call_s >= 1.0:
            console.print(Text(f"{row.name}: first call {row.first_call_s:.1f} s (JIT compilation "
                               "or lazy loading), not in the timings", style="dim"))
    if report.peak_tflops is None:
        console.print(Text("of peak: fadoctor's matrix has no sourced dense peak for this GPU",
                           style="dim"))
    rec = report.recommendation
    if rec is None:
        console.print(Text("No target passed its smoke test at this configuration: nothing to "
                           "recommend.", style="bold red"))
        return
    console.print(Text.assemble(("Fastest correct: ", "bold"), (rec.name, "bold green"),
                                f" — {rec.tflops:.1f} TFLOP/s forward+backward; {rec.note}"))
    if rec.code:
        for line in rec.code.splitlines():
            console.print(Text(f"    {line}", style="cyan"), soft_wrap=True)
