"""Benchmark fadoctor's start-up side by side with the interpreter's own: `python -c pass`,
`fadoctor --version`, `fadoctor --help`, `fadoctor check` on an interpreter without torch and
`fadoctor triage` of a short report.

    python benchmarks/bench_startup.py [--runs 7] [--baseline SRC] [--json]

Runs are interleaved (pass, version, help, check, pass, ...) so that every command sees the same
machine state; the report gives each median and how far it is above `python -c pass`. With
`--baseline SRC` (the `src` folder of another checkout, e.g. from `git worktree add`), the same
commands also run from that tree (PYTHONPATH), interleaved, and the ratios current/baseline are
given: the comparison a change to start-up should be judged by. Each row also gives the median
CPU seconds of the command and every process it waited for (the workers in the target
interpreter included): on a busy machine wall time mostly measures the other work. For
`check`, `first_worker_s` is when the first worker in the target interpreter started (the target
is the bare venv's python behind a two-line shell script that notes the time of each start).

Both trees run from bytecode, as an installed fadoctor does (pip compiles it at install): each
tree's `src` (and the `data` beside it) is copied into the benchmark's temporary folder and
compiled there, so that neither checkout is written to; the worker in the target interpreter
(the same Python here, run with -B) reads its bytecode from there too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Dict, List, Optional, Tuple

COMMANDS = {"version": ["--version"], "help": ["--help"], "check": ["check", "--python", "{bare}"],
            "triage": ["triage", "{report}"]}
# a short real report (a Turing GPU refused by a flash-attention fork): the start-up of triage
REPORT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "reports" / \
    "flashvsr36-block-sparse-attn-turing" / "report.txt"


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def target(bare: Path, tmp: str) -> Tuple[str, Path]:
    """The bare venv's python behind a script that notes when each worker starts, and the log."""
    log, script = Path(tmp) / "starts.log", Path(tmp) / "target-python"
    script.write_text(f'#!/bin/sh\ndate +%s.%N >> "{log}"\nexec "{bare}" "$@"\n',
                      encoding="utf-8")
    script.chmod(0o755)
    return str(script), log


def timed(cmd: List[str], env: Dict[str, str], log: Path) -> Tuple[float, float, float]:
    """Wall seconds, CPU seconds (its own and its waited-for children's) and when the first
    worker started (nan: none did) of one run."""
    log.unlink(missing_ok=True)
    cpu, start, epoch = cpu_of_children(), time.perf_counter(), time.time()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    wall, used = time.perf_counter() - start, cpu_of_children() - cpu
    starts = log.read_text(encoding="utf-8").split() if log.exists() else []
    return wall, used, (min(map(float, starts)) - epoch) if starts else float("nan")


def environ(src: Optional[str]) -> Dict[str, str]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    return env


def compiled(label: str, src: str, tmp: str) -> str:
    """A compiled copy of the tree `src` (with its `data`): the `src` to run."""
    copy = Path(tmp) / label
    shutil.copytree(src, copy / "src", ignore=shutil.ignore_patterns("__pycache__"))
    if (Path(src).parent / "data").is_dir():
        shutil.copytree(Path(src).parent / "data", copy / "data")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(copy / "src")],
                   stdout=subprocess.DEVNULL, check=True)
    return str(copy / "src")


def measure(runs: int, bare: str, log: Path, trees: Dict[str, str]
            ) -> Dict[str, Dict[str, float]]:
    times: Dict[str, List[Tuple[float, float, float]]] = {}
    for _ in range(runs + 1):  # the first round warms the page cache and is not counted
        for label, src in trees.items():
            env = environ(src)
            rows = {"pass": [sys.executable, "-c", "pass"],
                    **{name: [sys.executable, "-m", "fadoctor",
                              *(a.format(bare=bare, report=REPORT) for a in args)]
                       for name, args in COMMANDS.items()}}
            for name, cmd in rows.items():
                times.setdefault(f"{label}:{name}", []).append(timed(cmd, env, log))
    return {key: summary(v[1:]) for key, v in times.items()}


def summary(runs: List[Tuple[float, float, float]]) -> Dict[str, float]:
    row = {"median_s": round(statistics.median(w for w, _, _ in runs), 4),
           "median_cpu_s": round(statistics.median(c for _, c, _ in runs), 4)}
    firsts = [f for _, _, f in runs if f == f]
    if firsts:
        row["first_worker_s"] = round(statistics.median(firsts), 4)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", help="the src folder of a baseline checkout")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sources = {"current": Path(__file__).resolve().parents[1] / "src"}
    if args.baseline:
        sources["baseline"] = Path(args.baseline).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp) / "bare"
        venv.EnvBuilder(with_pip=False).create(bare)
        python, log = target(bare / "bin" / "python", tmp)
        trees = {label: compiled(label, str(src), tmp) for label, src in sources.items()}
        result = measure(args.runs, python, log, trees)
    for label in trees:
        base = result[f"{label}:pass"]["median_s"]
        for name in COMMANDS:
            row = result[f"{label}:{name}"]
            row["above_pass_s"] = round(row["median_s"] - base, 4)
    if args.baseline:
        for name in ("pass", *COMMANDS):
            now, then = result[f"current:{name}"], result[f"baseline:{name}"]
            result[f"ratio:{name}"] = {key: round(now[key] / then[key], 3) for key in now
                                       if key in then and key != "above_pass_s" and then[key]}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, row in result.items():
        print(f"{key:22} " + "  ".join(f"{k} {v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
