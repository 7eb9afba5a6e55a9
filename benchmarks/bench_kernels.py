"""Benchmark what the kernel smoke tests add to `fadoctor check`, against `import torch` plus the
flash-attention family imports in the same interpreter.

    python benchmarks/bench_kernels.py [--python PATH] [--runs 3] [--no-warm] [--json]

Interleaved runs (baseline, check --kernels none, check --kernels default, ...) so that all see
the same machine state, after one unmeasured run of each (--no-warm: none; the family probe that
comes first has read torch and the families from disk already); medians. The baseline is `python
-c "import torch; import <each family module that imports here>"`. Reported: what the default
smoke set adds to check (default minus none), each as a ratio to the baseline, and from one
`fadoctor snapshot --kernels default` each kernel stage's seconds and each target's first call
(flash-attn-4 JIT-compiles its kernels on its first call: reported apart). The budget: the smoke
set adds at most 3 s beyond the imports, the first-call JIT excluded.

fadoctor keeps flash-attn-4's compile cache in its own folder (FADOCTOR_CACHE_DIR; here a fresh
temporary one, filled by the unmeasured run): `check --kernels default` is measured with it and,
interleaved, with it turned off (FADOCTOR_CACHE_DIR=""), which pays the first-call JIT every time
as a first `check` does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

from bench_check import timed  # the same timing as check's benchmark (run from benchmarks/)
from gpu_kernels import statuses

FAMILY_MODULES = ("flash_attn", "flash_attn_interface", "flash_attn.cute", "vllm_flash_attn")
BUDGET_S = 3.0




def importable(python: str, env: Dict[str, str]) -> List[str]:
    """The family modules that import in the target (after torch)."""
    code = (f"import importlib, json, torch\nok = []\nfor m in {FAMILY_MODULES!r}:\n    try:\n"
            "        importlib.import_module(m); ok.append(m)\n    except Exception:\n"
            "        pass\nprint(json.dumps(ok))")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env,
                          check=True)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def fadoctor(python: str, *args: str) -> List[str]:
    return [sys.executable, "-m", "fadoctor", *args, "--python", python]


def kernel_stages(python: str, env: Dict[str, str]) -> Dict[str, Any]:
    """One snapshot with the default smoke set: each kernel stage's time and first calls."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "facts.json")
        subprocess.run(fadoctor(python, "snapshot", "--kernels", "default", "-o", path),
                       env=env, check=True, stdout=subprocess.DEVNULL)
        with open(path, encoding="utf-8") as fh:
            facts = json.load(fh)
    first: Dict[str, Any] = {}
    for target, probe in ((facts.get("smoke") or {}).get("targets") or {}).items():
        call = (probe.get("data") or {}).get("first_call")
        if call:
            first[target] = {"first_s": call["first_s"], "repeat_s": call["repeat_s"]}
    stages = {k: v for k, v in facts.get("timings", {}).items()}
    return {"timings": stages, "first_calls": first, "cases": statuses(facts)}


def measure(python: str, runs: int, env: Dict[str, str], warm: bool = True) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as cache:
        return _measure(python, runs, env, {**env, "FADOCTOR_CACHE_DIR": cache}, warm)


def _measure(python: str, runs: int, env: Dict[str, str], cached: Dict[str, str], warm: bool
             ) -> Dict[str, Any]:
    modules = importable(python, env)
    off = {**env, "FADOCTOR_CACHE_DIR": ""}
    baseline_cmd = [python, "-c", "; ".join(["import torch"] + [f"import {m}" for m in modules])]
    default = fadoctor(python, "check", "--kernels", "default", "-f", "json")
    commands = {"imports": (baseline_cmd, env),
                "check_none": (fadoctor(python, "check", "--kernels", "none", "-f", "json"), cached),
                "check_default": (default, cached), "check_default_no_cache": (default, off)}
    # The unmeasured runs warm the page cache for every side and fill fadoctor's JIT cache.
    for cmd, cmd_env in commands.values() if warm else ():
        timed(cmd, cmd_env)
    samples: Dict[str, List[float]] = {k: [] for k in commands}
    for _ in range(runs):
        for key, (cmd, cmd_env) in commands.items():
            samples[key].append(timed(cmd, cmd_env))
    med = {k: statistics.median(v) for k, v in samples.items()}
    stages = kernel_stages(python, off)  # the first-call JIT as a first check pays it
    fa4 = stages["first_calls"].get("fa4")
    jit = max(0.0, fa4["first_s"] - fa4["repeat_s"]) if fa4 else 0.0
    added = med["check_default"] - med["check_none"]
    return {"runs": runs, "family_modules": modules,
            "median_s": {k: round(v, 3) for k, v in med.items()},
            "samples_s": {k: [round(x, 3) for x in v] for k, v in samples.items()},
            "smoke_adds_s": round(added, 3), "fa4_first_call_jit_s": round(jit, 3),
            "smoke_adds_beyond_jit_s": round(added - jit, 3),
            "within_budget": added - jit <= BUDGET_S,
            "ratio_check_default_to_imports": round(med["check_default"] / med["imports"], 3),
            "ratio_check_none_to_imports": round(med["check_none"] / med["imports"], 3),
            "ratio_check_default_no_cache_to_imports": round(
                med["check_default_no_cache"] / med["imports"], 3),
            "kernel_stages": stages}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-warm", action="store_true", help="no unmeasured run first")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    summary = measure(args.python, args.runs, dict(os.environ), warm=not args.no_warm)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    med = summary["median_s"]
    print(f"runs: {args.runs} each, interleaved; family modules: {summary['family_modules']}")
    print(f"  import torch + families     median {med['imports']:.3f} s")
    print(f"  check --kernels none        median {med['check_none']:.3f} s")
    print(f"  check --kernels default     median {med['check_default']:.3f} s "
          f"({summary['ratio_check_default_to_imports']:.2f}x the imports; fadoctor's JIT cache)")
    print(f"  ... without the cache       median {med['check_default_no_cache']:.3f} s "
          f"({summary['ratio_check_default_no_cache_to_imports']:.2f}x the imports)")
    print(f"  the smoke set adds          {summary['smoke_adds_s']:.3f} s, of which flash-attn-4's "
          f"first-call JIT {summary['fa4_first_call_jit_s']:.3f} s "
          f"(budget {BUDGET_S:g} s beyond it: {'met' if summary['within_budget'] else 'MISSED'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
