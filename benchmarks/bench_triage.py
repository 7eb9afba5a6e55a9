"""Benchmark `fadoctor triage` on large pasted reports: CPU seconds per MB, next to a baseline.

    python benchmarks/bench_triage.py [--megabytes 2] [--runs 3] [--json]

Inputs, each about --megabytes long: a log of real report lines (the fixtures' lines, shuffled —
denser in facts and errors than any real log), random bytes, and one enormous line. The baseline
is the least any reader of the text does: decode it, split it into lines and lower-case each (the
first step of triage, and of any grep). The ratio says what reading every mechanism costs on top.
Times are this process's CPU time (time.process_time), the best of --runs, so that other work on
a busy machine does not count.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Callable, Dict, Union

from fadoctor.matrix import load_matrix
from fadoctor.triage.diagnose import triage
from fadoctor.triage.text import decode

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def inputs(megabytes: float) -> Dict[str, Union[str, bytes]]:
    rng = random.Random(8)
    lines = sorted({ln for p in FIXTURES.glob("*/*/report.txt")
                    for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()})
    size = int(megabytes * 1e6)
    log, total = [], 0
    while total < size:
        line = rng.choice(lines)
        log.append(line)
        total += len(line) + 1
    return {"log of report lines": "\n".join(log),
            "random bytes": bytes(rng.getrandbits(8) for _ in range(size)),
            "one line": "x" * (size - 40) + " undefined symbol: _ZN3c104cuda9SetDeviceEi"}


def best(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    matrix = load_matrix(None)
    triage("warm-up: import everything once", matrix)
    results = {}
    for name, raw in inputs(args.megabytes).items():
        mb = len(raw) / 1e6
        baseline = best(lambda raw=raw: [ln.lower() for ln in decode(raw).splitlines()],
                        args.runs)
        measured = best(lambda raw=raw: triage(raw, matrix), args.runs)
        results[name] = {"megabytes": round(mb, 2), "triage_s_per_mb": round(measured / mb, 3),
                         "baseline_s_per_mb": round(baseline / mb, 4),
                         "ratio": round(measured / baseline, 1) if baseline else None}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, r in results.items():
        print(f"{name:<20} {r['megabytes']:>5} MB  triage {r['triage_s_per_mb']:.3f} s/MB  "
              f"baseline {r['baseline_s_per_mb']:.4f} s/MB  ratio {r['ratio']}x")


if __name__ == "__main__":
    main()
