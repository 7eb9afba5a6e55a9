"""Verify the kernel smoke tests, the torch.compile probe and `fadoctor bench` on a GPU machine.

    OUT=DIR python3 benchmarks/gpu_kernels.py --deps DEPS --fa4 FA4 [--steps default,full,...]

DEPS: the PYTHONPATH entries holding fadoctor's own dependencies where the machine's python3
lacks them (`pip install --target`, as for gpu_verify.sh; empty if installed). FA4: the entries
that add flash-attn-4 and its CuTe DSL runtime. The examined interpreter is python3; every
fadoctor run sees PYTHONPATH=src:DEPS:FA4, as a training job would. Steps (all by default):

  default  snapshot --kernels default; the report; every SDPA backend and flash-attn-4 passes
  full     the same with --kernels full (the whole grid)
  compile  snapshot --kernels none --compile; the report
  bench    fadoctor bench --format json, and an independent timing (triton.testing.do_bench) of
           the same targets in the same call: medians within 5%, the same ranking
  crash    a fake flash-attn whose kernel dies inside a CUDA driver call (cuMemcpyDtoH to an
           invalid host address), and one that trips a device-side assert: contained, and
           flash-attn-4 after it still passes
  cost     benchmarks/bench_kernels.py: what the default smoke set adds to check, as a ratio
           to import torch + the family imports

Everything goes to $OUT; summary.json holds each step's verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
STEPS = ("default", "full", "compile", "bench", "crash", "cost")
MUST_PASS = ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math", "fa4")


class Machine:
    """How to run fadoctor here, and where its outputs go."""

    def __init__(self, out: Path, deps: str, fa4: str) -> None:
        self.out, self.deps, self.fa4 = out, deps, fa4

    def env(self, extra: str = "") -> Dict[str, str]:
        parts = [str(SRC), self.deps, extra, self.fa4]
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
        return env

    def fadoctor(self, name: str, *args: str, extra: str = "") -> Dict[str, Any]:
        """Run `python3 -m fadoctor args`; stdout to OUT/name, stderr beside it."""
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "fadoctor", *args], capture_output=True,
                              text=True, env=self.env(extra), check=False)
        (self.out / name).write_text(done.stdout, encoding="utf-8")
        (self.out / f"{name}.stderr").write_text(done.stderr, encoding="utf-8")
        return {"exit": done.returncode, "seconds": round(time.perf_counter() - start, 2)}

    def snapshot(self, name: str, *args: str, extra: str = "") -> Dict[str, Any]:
        """A snapshot (facts JSON) and its report rendered from the file (no second run)."""
        run = self.fadoctor(f"facts-{name}.json", "snapshot", "-o", "-", *args, extra=extra)
        facts = self.out / f"facts-{name}.json"
        self.fadoctor(f"check-{name}.txt", "check", "--facts", str(facts), "-v")
        self.fadoctor(f"check-{name}.json", "check", "--facts", str(facts), "-f", "json")
        run["facts"] = json.loads(facts.read_text(encoding="utf-8"))
        return run


def statuses(facts: Dict[str, Any], kind: str = "smoke") -> Dict[str, Any]:
    """Per target: the case statuses, or the stage's failure."""
    out: Dict[str, Any] = {}
    for target, probe in ((facts.get(kind) or {}).get("targets") or {}).items():
        data = probe.get("data")
        if data is None:
            out[target] = {"failure": probe.get("failure")}
            continue
        counts: Dict[str, int] = {}
        for case in data.get("cases", []):
            counts[case["status"]] = counts.get(case["status"], 0) + 1
        out[target] = {"cases": counts, "skipped": data.get("skipped"),
                       "first_call": data.get("first_call"),
                       "context_lost": data.get("context_lost", False)}
    return out


def passes(summary: Dict[str, Any]) -> bool:
    """Every target that must pass ran cases, none failed, at least one passed."""
    for target in MUST_PASS:
        cases = (summary.get(target) or {}).get("cases") or {}
        if not cases.get("passed") or any(cases.get(s) for s in ("wrong", "nonfinite", "error")):
            return False
    return True


def step_default(m: Machine) -> Dict[str, Any]:
    run = m.snapshot("kernels-default", "--kernels", "default")
    found = statuses(run.pop("facts"))
    return {**run, "targets": found, "ok": passes(found)}


def step_full(m: Machine) -> Dict[str, Any]:
    run = m.snapshot("kernels-full", "--kernels", "full")
    found = statuses(run.pop("facts"))
    return {**run, "targets": found, "ok": passes(found)}


def step_compile(m: Machine) -> Dict[str, Any]:
    run = m.snapshot("compile", "--kernels", "none", "--compile")
    targets = {}
    for target, probe in ((run.pop("facts").get("compile") or {}).get("targets") or {}).items():
        data = probe.get("data") or {}
        targets[target] = {"fullgraph": data.get("fullgraph"), "explain": data.get("explain"),
                           "custom_ops": data.get("custom_ops"), "skipped": data.get("skipped"),
                           "installed": data.get("installed"), "failure": probe.get("failure")}
    return {**run, "targets": targets}


def step_bench(m: Machine) -> Dict[str, Any]:
    run = m.fadoctor("bench.json", "bench", "--format", "json")
    report = json.loads((m.out / "bench.json").read_text(encoding="utf-8"))
    render = ("import json,sys; from fadoctor.bench import BenchReport; "
              "from fadoctor.render.bench import render_bench_text; "
              "print(render_bench_text(BenchReport.model_validate(json.load(sys.stdin)), 110), "
              "end='')")
    text = subprocess.run([sys.executable, "-c", render], input=json.dumps(report), text=True,
                          capture_output=True, env=m.env(), check=True).stdout
    (m.out / "bench.txt").write_text(text, encoding="utf-8")
    independent = _independent(m, report)
    return {**run, **compare(report, independent)}


def _independent(m: Machine, report: Dict[str, Any]) -> Dict[str, Any]:
    """do_bench in a child whose compile caches go to a temporary folder (removed)."""
    with tempfile.TemporaryDirectory(prefix="fadoctor-jit-") as cache:
        env = m.env()
        for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUTE_DSL_CACHE_DIR",
                     "CUDA_CACHE_PATH", "TMPDIR"):
            env[name] = os.path.join(cache, name.lower())
            os.makedirs(env[name])
        done = subprocess.run([sys.executable, __file__, "--independent"],
                              input=json.dumps(report), capture_output=True, text=True, env=env,
                              check=False)
    (m.out / "independent.stderr").write_text(done.stderr, encoding="utf-8")
    (m.out / "independent.json").write_text(done.stdout, encoding="utf-8")
    result: Dict[str, Any] = json.loads(done.stdout) if done.returncode == 0 else {}
    return result


def compare(report: Dict[str, Any], independent: Dict[str, Any]) -> Dict[str, Any]:
    rows = {r["target"]: r for r in report["rows"] if r["status"] == "timed"}
    out: Dict[str, Any] = {"targets": {}}
    for target, row in rows.items():
        theirs = independent.get(target) or {}
        entry = {}
        for mode in ("fwd", "fwd_bwd"):
            ours, other = row[mode]["median_ms"], theirs.get(mode)
            ratio = ours / other if other else None
            entry[mode] = {"fadoctor_ms": ours, "do_bench_ms": other,
                           "ratio": round(ratio, 4) if ratio else None,
                           "within_5pct": ratio is not None and abs(ratio - 1) <= 0.05}
        out["targets"][target] = entry
    ours_rank = sorted(rows, key=lambda t: rows[t]["fwd_bwd"]["median_ms"])
    their_rank = sorted((t for t in rows if (independent.get(t) or {}).get("fwd_bwd")),
                        key=lambda t: independent[t]["fwd_bwd"])
    out.update(ranking_fadoctor=ours_rank, ranking_do_bench=their_rank,
               same_ranking=ours_rank == their_rank,
               ok=ours_rank == their_rank and all(e[m]["within_5pct"] for e in
                                                   out["targets"].values() for m in e),
               recommendation=report.get("recommendation"))
    return out


def independent_timing(report: Dict[str, Any]) -> Dict[str, Any]:
    """The same targets and shape, timed by triton.testing.do_bench (median), in this process."""
    import torch
    import triton.testing

    from fadoctor.target.attention import calls, cases
    from fadoctor.target.tables import FAMILIES

    shape = report["shape"]
    options = {"shape": {k: shape[k] for k in ("batch", "seqlen", "heads", "kv_heads")},
               "head_dim": shape["head_dim"], "causal": shape["causal"], "dtype": shape["dtype"]}
    out: Dict[str, Any] = {}
    for row in report["rows"]:
        if row["status"] != "timed":
            continue
        impl = calls.load(torch, row["target"], FAMILIES)["impl"]
        case = cases.single(options, "sdpa" if row["target"].startswith("sdpa") else "func")
        out[row["target"]] = _time_target(torch, triton, impl, case, calls.make_inputs(
            torch, case, "cuda"))
    return out


def _time_target(torch: Any, triton: Any, impl: Any, case: Any, x: Any) -> Dict[str, float]:
    def forward() -> Any:
        with impl.context():
            return impl.forward(case, x)

    grad = torch.randn_like(forward())
    return {"fwd": _do_bench(triton, forward, x),
            "fwd_bwd": _do_bench(triton, lambda: forward().backward(grad), x)}


def _do_bench(triton: Any, fn: Callable[[], Any], x: Any) -> float:
    return float(triton.testing.do_bench(fn, warmup=25, rep=200, grad_to_none=[x.q, x.k, x.v],
                                         return_mode="median"))


def step_crash(m: Machine) -> Dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.helpers.fake_family import make_family

    out: Dict[str, Any] = {}
    for mode in ("cuda_segfault", "device_assert"):
        with tempfile.TemporaryDirectory(prefix=f"fake-{mode}-") as site:
            make_family(Path(site), mode, "fa2")
            run = m.snapshot(f"crash-{mode}", "--kernels", "default", extra=site)
        found = statuses(run.pop("facts"))
        fa2, fa4 = found.get("fa2") or {}, found.get("fa4") or {}
        contained = ((fa2.get("failure") or {}).get("signal") == "SIGSEGV" if mode ==
                     "cuda_segfault" else bool(fa2.get("context_lost")))
        out[mode] = {**run, "fa2": fa2, "fa4": fa4, "contained": contained,
                     "fa4_after_it_passes": bool((fa4.get("cases") or {}).get("passed"))}
    out["ok"] = all(v["contained"] and v["fa4_after_it_passes"] for v in out.values()
                    if isinstance(v, dict))
    return out


def step_cost(m: Machine) -> Dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_kernels

    result: Dict[str, Any] = bench_kernels.measure(sys.executable, 3, m.env())
    (m.out / "cost.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deps", default="", help="PYTHONPATH entries with fadoctor's deps")
    parser.add_argument("--fa4", default="", help="PYTHONPATH entries that add flash-attn-4")
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--independent", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.independent:  # the child of step_bench
        print(json.dumps(independent_timing(json.load(sys.stdin))))
        return 0
    out = Path(os.environ["OUT"])
    out.mkdir(parents=True, exist_ok=True)
    machine = Machine(out, args.deps, args.fa4)
    steps = {"default": step_default, "full": step_full, "compile": step_compile,
             "bench": step_bench, "crash": step_crash, "cost": step_cost}
    summary: Dict[str, Any] = {}
    for name in args.steps.split(","):
        start = time.perf_counter()
        try:
            summary[name] = steps[name](machine)
        except Exception as exc:  # one step's failure must not lose the others'
            summary[name] = {"error": f"{type(exc).__name__}: {exc}"}
        summary[name]["step_seconds"] = round(time.perf_counter() - start, 1)
        (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str),
                                          encoding="utf-8")
        print(name, json.dumps({k: v for k, v in summary[name].items()
                                if k in ("ok", "exit", "error", "step_seconds")}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
