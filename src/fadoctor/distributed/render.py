"""Renderers of a job's report (pure): the merged report through the usual renderers, with the job's
nodes and bus bandwidths added to text and Markdown, and the whole report as JSON."""

from __future__ import annotations

import io
from typing import Callable, Dict, List

from rich.console import Console
from rich.text import Text

from fadoctor.distributed.messages import rank_text, size_text
from fadoctor.distributed.report import Bandwidth, JobReport
from fadoctor.formats import Format
from fadoctor.render.dispatch import RENDERERS
from fadoctor.render.markdown import _cell, render_markdown
from fadoctor.render.options import RenderOptions
from fadoctor.render.text import render_text
from fadoctor.safety.inert import inert

SHOWN_NODES = 8  # nodes listed by name in the header; the rest are counted


def job_line(report: JobReport) -> str:
    nodes = [f"{n.node} ({', '.join(n.hosts)}): {rank_text(n.ranks)}" for n in report.nodes]
    more = len(nodes) - SHOWN_NODES
    listed = "; ".join(nodes[:SHOWN_NODES]) + (f"; and {more} more nodes" if more > 0 else "")
    got = sum(len(n.ranks) for n in report.nodes)
    return (f"{got} of {report.world_size} ranks reported, from {len(report.nodes)} node(s): "
            f"{listed}")


def bandwidth_rows(report: JobReport, verbose: bool) -> List[Bandwidth]:
    """NCCL rows always; gloo's (a CPU transport, a sanity check) only with -v."""
    return [b for b in report.bandwidth if verbose or b.backend == "nccl"]


def _row(b: Bandwidth) -> List[str]:
    return [b.backend, b.scope, b.op, size_text(b.bytes), str(b.ranks),
            f"{b.seconds * 1e6:.0f}", f"{b.algbw_gbps:.2f}", f"{b.busbw_gbps:.2f}",
            str(b.slowest_rank), "yes" if b.correct else "NO"]


HEADER = ["backend", "group", "op", "size", "ranks", "time (us)", "algbw (GB/s)",
          "busbw (GB/s)", "slowest rank", "correct"]
NOTE = ("bus bandwidth as nccl-tests defines it: algbw = S/t; busbw = algbw * 2(n-1)/n "
        "(all_reduce), algbw * (n-1)/n (all_gather); t on the group's slowest rank")


def _printer(options: RenderOptions) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=options.width, color_system="standard" if options.color
                   else None, force_terminal=options.color, highlight=False, soft_wrap=True,
                   emoji=False), buffer


def render_job_text(report: JobReport, options: RenderOptions) -> str:
    """The merged report as `check` prints it, the job's line under the headline, bandwidths last."""
    first, _, rest = render_text(report.merged, options).partition("\n")
    head, head_buffer = _printer(options)
    line = Text("  job        ", style="dim")
    line.append(job_line(report))
    head.print(line)
    tail, tail_buffer = _printer(options)
    rows = bandwidth_rows(report, options.verbose)
    if rows:
        table = [HEADER] + [_row(b) for b in rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
        tail.print()
        tail.print(Text(NOTE, style="dim"))
        for cells in table:
            tail.print(Text("  " + "  ".join(c.rjust(w) for c, w in zip(cells, widths))))
    return f"{first}\n{head_buffer.getvalue()}{rest}{tail_buffer.getvalue()}"


def render_job_markdown(report: JobReport, options: RenderOptions) -> str:
    out = [render_markdown(report.merged, options).rstrip(), "", "### Job", "",
           f"- {_cell(job_line(report))}"]
    rows = bandwidth_rows(report, options.verbose)
    if rows:
        out += ["", "### Bus bandwidth", "", f"_{NOTE}_", "",
                "| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
        out += ["| " + " | ".join(_cell(c) for c in _row(b)) + " |" for b in rows]
    return "\n".join(out) + "\n"


def _json(report: JobReport, options: RenderOptions) -> str:
    return report.model_dump_json(indent=2) + "\n"


def _merged(fmt: Format) -> Callable[[JobReport, RenderOptions], str]:
    return lambda report, options: RENDERERS[fmt](report.merged, options)


JOB_RENDERERS: Dict[Format, Callable[[JobReport, RenderOptions], str]] = {
    Format.TEXT: render_job_text,
    Format.JSON: _json,
    Format.JUNIT: _merged(Format.JUNIT),
    Format.MARKDOWN: render_job_markdown,
    Format.GITHUB: _merged(Format.GITHUB),
}


def render_job(report: JobReport, fmt: Format, options: RenderOptions = RenderOptions()) -> str:
    """`report` in `fmt`, made inert first as `fadoctor.render.render` makes a report: host names
    and values from every rank are data, whatever the format."""
    return JOB_RENDERERS[fmt](inert(report), options)
