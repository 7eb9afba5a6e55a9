"""Benchmark `fadoctor check` against its baseline, `python -c "import torch"`, side by side.

    python benchmarks/bench_check.py [--python PATH] [--runs 7]

Runs are interleaved (baseline, check, baseline, check, ...) so that both see the same machine
state; the report gives medians and the ratio. A second measurement runs `fadoctor check` on an
interpreter without torch (a fresh `venv --without-pip`), whose target is under one second.
Prints a table and, with --json, a machine-readable summary.
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
from typing import Dict, List, Sequence


def timed(cmd: Sequence[str], env: Dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                          check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1 = problems found, a normal diagnosis
        raise SystemExit(f"{' '.join(cmd)} exited with {proc.returncode}")
    return elapsed


def fadoctor(target: str) -> List[str]:
    return [sys.executable, "-m", "fadoctor", "check", "--python", target, "--format", "json"]


def measure(python: str, runs: int, env: Dict[str, str]) -> Dict[str, object]:
    baseline: List[float] = []
    check: List[float] = []
    timed([python, "-c", "import torch"], env)  # warm the page cache for both sides
    for _ in range(runs):
        baseline.append(timed([python, "-c", "import torch"], env))
        check.append(timed(fadoctor(python), env))
    b, c = statistics.median(baseline), statistics.median(check)
    return {"runs": runs, "import_torch_median_s": round(b, 3), "check_median_s": round(c, 3),
            "ratio": round(c / b, 3), "import_torch_s": [round(x, 3) for x in baseline],
            "check_s": [round(x, 3) for x in check]}


def measure_without_torch(runs: int, env: Dict[str, str]) -> Dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        venv.EnvBuilder(with_pip=False).create(tmp)
        bare = str(Path(tmp) / "bin" / "python")
        times = [timed(fadoctor(bare), env) for _ in range(runs)]
    return {"runs": runs, "check_no_torch_median_s": round(statistics.median(times), 3),
            "check_no_torch_s": [round(x, 3) for x in times]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    env = dict(os.environ)
    with_torch = measure(args.python, args.runs, env)
    without = measure_without_torch(args.runs, env)
    summary = {"python": args.python, **with_torch, **without}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"runs: {args.runs} each, interleaved; target interpreter: {args.python}")
    print(f"  python -c 'import torch'         median {with_torch['import_torch_median_s']:.3f} s")
    print(f"  fadoctor check                   median {with_torch['check_median_s']:.3f} s")
    print(f"  ratio check / import torch       {with_torch['ratio']:.2f}x   (target <= 1.3x)")
    print(f"  fadoctor check, no torch present median {without['check_no_torch_median_s']:.3f} s"
          "   (target < 1 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
