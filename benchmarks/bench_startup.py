"""Benchmark fadoctor's start-up side by side with the interpreter's own: `python -c pass`,
`fadoctor --version`, `fadoctor --help` and `fadoctor check` on an interpreter without torch.

    python benchmarks/bench_startup.py [--runs 7] [--baseline SRC] [--json]

Runs are interleaved (pass, version, help, check, pass, ...) so that every command sees the same
machine state; the report gives each median and how far it is above `python -c pass`. With
`--baseline SRC` (the `src` folder of another checkout, e.g. from `git worktree add`), the same
commands also run from that tree (PYTHONPATH), interleaved, and the ratios current/baseline are
given: the comparison a change to start-up should be judged by.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Dict, List, Optional

COMMANDS = {"version": ["--version"], "help": ["--help"], "check": ["check", "--python", "{bare}"]}


def timed(cmd: List[str], env: Dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - start


def environ(src: Optional[str]) -> Dict[str, str]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    return env


def measure(runs: int, bare: str, trees: Dict[str, Optional[str]]) -> Dict[str, Dict[str, float]]:
    times: Dict[str, List[float]] = {}
    for _ in range(runs + 1):  # the first round warms the page cache and is not counted
        for label, src in trees.items():
            env = environ(src)
            rows = {"pass": [sys.executable, "-c", "pass"],
                    **{name: [sys.executable, "-m", "fadoctor",
                              *(a.format(bare=bare) for a in args)]
                       for name, args in COMMANDS.items()}}
            for name, cmd in rows.items():
                times.setdefault(f"{label}:{name}", []).append(timed(cmd, env))
    return {key: {"median_s": round(statistics.median(v[1:]), 4)} for key, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", help="the src folder of a baseline checkout")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    trees: Dict[str, Optional[str]] = {"current": here}
    if args.baseline:
        trees["baseline"] = str(Path(args.baseline).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        venv.EnvBuilder(with_pip=False).create(tmp)
        result = measure(args.runs, str(Path(tmp) / "bin" / "python"), trees)
    for label in trees:
        base = result[f"{label}:pass"]["median_s"]
        for name in COMMANDS:
            row = result[f"{label}:{name}"]
            row["above_pass_s"] = round(row["median_s"] - base, 4)
    if args.baseline:
        for name in ("pass", *COMMANDS):
            result[f"ratio:{name}"] = {"current/baseline": round(
                result[f"current:{name}"]["median_s"] / result[f"baseline:{name}"]["median_s"], 3)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, row in result.items():
        print(f"{key:22} " + "  ".join(f"{k} {v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
