"""The `fadoctor bench` command: options -> collect_bench -> bench_report -> text or JSON."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable, List, Optional

import typer

from fadoctor.cli.guard import guarded
from fadoctor.cli.options import FLAG, _seconds
from fadoctor.cli.output import colour, width, write
from fadoctor.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from fadoctor.bench.run import BenchFacts, BenchOptions


class BenchFormat(str, Enum):
    text = "text"
    json = "json"


class DtypeChoice(str, Enum):
    bf16 = "bf16"
    fp16 = "fp16"


@guarded
def bench_command(
    python: Optional[str] = typer.Option(None, "--python", metavar="PATH",
                                         help="Interpreter (or environment "
                                         "folder) to benchmark; default as for check."),
    batch: int = typer.Option(2, "--batch", metavar="N",
                              min=1, help="Batch size."),
    seqlen: int = typer.Option(4096, "--seqlen", metavar="N",
                               min=16, help="Sequence length."),
    heads: int = typer.Option(32, "--heads", metavar="N",
                              min=1, help="Query heads."),
    kv_heads: Optional[int] = typer.Option(None, "--kv-heads", metavar="N",
                                           min=1, help="Key/value heads "
                                           "(fewer than --heads: grouped-query attention; "
                                           "default 8 where that divides --heads)."),
    head_dim: int = typer.Option(128, "--head-dim", metavar="N",
                                 min=8, help="Head dimension."),
    causal: bool = typer.Option(True, "--causal/--no-causal", metavar=FLAG,
                                help="Causal mask."),
    dtype: DtypeChoice = typer.Option(DtypeChoice.bf16, "--dtype", help="bf16 or fp16."),
    reps: int = typer.Option(30, "--reps", metavar="N",
                             min=3, help="Timed repetitions (the median is "
                             "reported)."),
    warmup: int = typer.Option(5, "--warmup", metavar="N",
                               min=1, help="Untimed calls first."),
    target: List[str] = typer.Option([], "--target", metavar="TARGET",
                                     help="Only this target (repeatable): "
                                     "sdpa_flash, sdpa_efficient, sdpa_cudnn, sdpa_math, fa2, "
                                     "fa3, fa4, vllm_fa."),
    fmt: BenchFormat = typer.Option(BenchFormat.text, "--format", "-f", help="text or json."),
    timeout: Optional[float] = typer.Option(None, "--timeout", metavar="SECONDS",
                                            callback=_seconds, help="Seconds each "
                                            "target may take (default 600)."),
    matrix_path: Optional[Path] = typer.Option(None, "--matrix", metavar="PATH",
                                               help="Use another "
                                               "compatibility matrix YAML."),
) -> int:
    """Time every working attention backend at your shape; recommend the fastest correct one."""
    from fadoctor.bench.run import BenchOptions, Shape
    from fadoctor.in_target import attention

    unknown = [t for t in target if t not in attention.TARGETS]
    if unknown:
        raise UsageError(f"--target {unknown[0]}: one of {', '.join(attention.TARGETS)}")
    kv = kv_heads if kv_heads is not None else (8 if heads % 8 == 0 else heads)
    if heads % kv:
        raise UsageError(f"--kv-heads {kv} must divide --heads {heads}")
    shape = Shape(batch=batch, seqlen=seqlen, heads=heads, kv_heads=kv, head_dim=head_dim,
                  causal=causal, dtype="bfloat16" if dtype == DtypeChoice.bf16 else "float16")
    options = BenchOptions(shape=shape, reps=reps, warmup=warmup, timeout=timeout,
                           targets=tuple(target) or attention.TARGETS)
    return run_bench(python, options, fmt, matrix_path)


def run_bench(python: Optional[str], options: BenchOptions, fmt: BenchFormat,
              matrix_path: Optional[Path]) -> int:
    from fadoctor.bench.run import bench_report
    from fadoctor.collect.target import resolve_target
    from fadoctor.matrix import load_matrix
    from fadoctor.render.bench import render_bench_json, render_bench_text

    chosen = resolve_target(python, os.environ)
    missing = _no_gpu(chosen.python) if options.device is None else ""
    if missing:  # at once, not after a stage per target that each find no GPU
        from fadoctor.cli.output import say

        say(f"fadoctor bench: {missing}")
        return ExitCode.PROBLEMS
    facts = _with_progress(lambda progress: _collect(chosen.python, options, progress),
                           len(options.targets) + 1)
    report = bench_report(facts, load_matrix(matrix_path))
    if fmt == BenchFormat.json:
        write(render_bench_json(report))
    else:
        write(render_bench_text(report, width(100), colour(1)))
    return ExitCode.OK if report.recommendation is not None else ExitCode.PROBLEMS


def _no_gpu(python: str) -> str:
    """Why there is no CUDA GPU to time attention on, from the files only (no torch import, a
    fraction of a second); empty when there may be one."""
    from fadoctor.collect.run import Collection
    from fadoctor.collect.target import CollectOptions
    from fadoctor.install.views import torch_view

    facts = Collection(CollectOptions(python=python, static=True)).facts()
    torch, driver = torch_view(facts), facts.driver.data
    if torch is not None and not torch.cuda and not torch.hip:
        return (f"no CUDA GPU to time attention on: torch {torch.version} in {python} is a "
                "CPU-only build (`fadoctor check` says what to install)")
    if driver is not None and not driver.present and not (torch is not None and torch.hip):
        return "no CUDA GPU to time attention on: no NVIDIA driver was found"
    return ""


def _collect(python: str, options: BenchOptions, progress: Optional[Callable[[str], None]]
             ) -> BenchFacts:
    from fadoctor.bench.run import collect_bench

    return collect_bench(python, os.environ, options, progress)


def _with_progress(work: Callable[[Optional[Callable[[str], None]]], BenchFacts], total: int
                   ) -> BenchFacts:
    """A rich progress bar on stderr (a terminal only): one step per target."""
    if not sys.stderr.isatty():
        return work(None)
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from fadoctor.in_target.registry import BY_NAME

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/"
                  "{task.total}"), TimeElapsedColumn(), console=Console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task("starting the target interpreter", total=total)
        started: List[str] = []

        def step(stage: str) -> None:
            started.append(stage)
            bar.update(task, completed=len(started) - 1,
                       description=BY_NAME[stage].label if stage in BY_NAME else stage)

        return work(step)
