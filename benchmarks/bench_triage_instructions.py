"""Count the instructions one `fadoctor triage` of a log of report lines takes (and its text
report), here and in a baseline checkout: a count a shared machine's noise does not move, where
CPU seconds on a busy 2-core machine vary by a third between runs.

    python benchmarks/bench_triage_instructions.py [--lines 10000] [--baseline SRC] [--json]

Each tree runs a child under valgrind's cachegrind (`--cache-sim=no`: instructions only) that
imports fadoctor, triages a short text once (start-up), then triages the log N times. One
triage is the difference between N=3 and N=1, halved, so that start-up and the first run's
one-time work (a catalogued pattern compiled at its first use) are left out; start-up is the
count of the N=0 child. The log is the fixtures' report lines drawn with a fixed seed, as in
bench_triage.py. Each tree runs from a compiled copy of its `src` (and the `data` beside it), as
an installed fadoctor runs from its bytecode, so that neither pays for compiling its source.
Needs valgrind on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, Optional

from bench_startup import compiled  # the same compiled copy as start-up's (run from benchmarks/)

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import random, sys
from pathlib import Path
from fadoctor.matrix import load_matrix
from fadoctor.triage.diagnose import triage
from fadoctor.triage.render import RENDERERS
lines = sorted({ln for p in Path(sys.argv[1]).glob("*/*/report.txt")
                for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()})
rng = random.Random(8)
log = "\n".join(rng.choice(lines) for _ in range(int(sys.argv[2])))
matrix = load_matrix(None)
triage("warm-up: import everything once", matrix)
for _ in range(int(sys.argv[3])):
    RENDERERS["text"](triage(log, matrix), False)
"""


def instructions(src: Optional[Path], lines: int, runs: int) -> int:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", sys.executable, "-c", CHILD,
                           str(ROOT / "tests" / "fixtures"), str(lines), str(runs)],
                          capture_output=True, text=True, env=env, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output: {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def measure(src: Path, lines: int) -> Dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(compiled("tree", str(src), tmp))
        start, one, three = (instructions(tree, lines, n) for n in (0, 1, 3))
    return {"startup": start, "triage": (three - one) // 2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--baseline", help="the src folder of a baseline checkout")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH")
    result: Dict[str, Dict[str, float]] = {"current": dict(measure(ROOT / "src", args.lines))}
    if args.baseline:
        result["baseline"] = dict(measure(Path(args.baseline).resolve(), args.lines))
        result["ratio"] = {k: round(result["current"][k] / result["baseline"][k], 3)
                           for k in result["current"]}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for label, row in result.items():
        print(f"{label:<9}" + "  ".join(f"{k} {v:,.0f}" if label != "ratio" else f"{k} {v}"
                                        for k, v in row.items()))


if __name__ == "__main__":
    main()
