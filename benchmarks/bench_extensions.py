"""Benchmark `fadoctor check --static` on an environment full of torch extensions against one
`python -c "import torch"` in the same interpreter.

    FADOCTOR_TEST_CACHE=... python benchmarks/bench_extensions.py [--runs 5] [--json]

The environment is torch (the interpreter's own) plus the torchvision 0.19.0, torchaudio 2.4.0
and xformers 0.0.28.post1 wheels from the test cache (.ci/run downloads them), unpacked into a
temporary site folder on PYTHONPATH: 15 compiled extensions that link torch, each found, named
and analysed. Runs are interleaved and the medians compared; the static run's own timings
(the files stage and the analysis) are reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from bench_check import timed  # the same timing as check's benchmark (run from benchmarks/)

WHEELS = ("torchvision-0.19.0-cp311-cp311-manylinux1_x86_64.whl",
          "torchaudio-2.4.0-cp311-cp311-manylinux1_x86_64.whl",
          "xformers-0.0.28.post1-cp311-cp311-manylinux_2_28_x86_64.whl")




def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cache = os.environ.get("FADOCTOR_TEST_CACHE")
    if not cache:
        raise SystemExit("set FADOCTOR_TEST_CACHE (where .ci/run downloads the wheels)")
    with tempfile.TemporaryDirectory() as site:
        for wheel in WHEELS:
            with zipfile.ZipFile(Path(cache) / wheel) as archive:
                archive.extractall(site)
        env = {**os.environ, "PYTHONPATH": site}
        baseline, static = [], []
        for _ in range(args.runs):
            baseline.append(timed([sys.executable, "-c", "import torch"], env))
            static.append(timed([sys.executable, "-m", "fadoctor", "check", "--static",
                                 "--python", sys.executable, "--format", "json"], env))
        snapshot = subprocess.run([sys.executable, "-m", "fadoctor", "snapshot", "--static",
                                   "--python", sys.executable, "-o", "-"], env=env,
                                  capture_output=True, text=True, check=True)
        facts = json.loads(snapshot.stdout)
    result = {"import_torch_s": round(statistics.median(baseline), 3),
              "check_static_s": round(statistics.median(static), 3),
              "ratio": round(statistics.median(static) / statistics.median(baseline), 3),
              "extensions": len(facts["binaries"]["data"]),
              "timings": facts["timings"], "runs": args.runs}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"import torch          {result['import_torch_s']:.3f} s (median of {args.runs})")
        print(f"check --static        {result['check_static_s']:.3f} s "
              f"({result['extensions']} extensions)  ratio {result['ratio']:.2f}x")
        print(f"in the static run     {result['timings']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
