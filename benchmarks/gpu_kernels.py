"""Verify the kernel smoke tests, the torch.compile probe and `fadoctor bench` on a GPU machine.

    OUT=DIR python3 benchmarks/gpu_kernels.py --deps DEPS --fa4 FA4 [--steps default,bench,...]

Run it from the root of a checkout (the crash step uses tests/helpers/fake_family.py). DEPS: the
PYTHONPATH entries holding fadoctor's own dependencies where the machine's python3 lacks them
(`pip install --target`; empty if installed). FA4: the entries that add flash-attn-4 and its CuTe
DSL runtime. The examined interpreter is python3; every fadoctor run sees PYTHONPATH=src:DEPS:FA4,
as a training job would. Steps (all by default; each has its own time limit, and all of them
together --budget seconds):

  default  snapshot --kernels default; every SDPA backend and flash-attn-4 passes (an SDPA
           backend that refuses enable_gqa passes with the key/value heads expanded)
  full     the same with --kernels full (the whole grid)
  compile  snapshot --kernels none --compile; the report
  bench    fadoctor bench --format json, and in a child the same targets timed by the GPU's own
           kernel records (torch.profiler/CUPTI: the sum of each call's kernel durations) and by
           triton.testing.do_bench: fadoctor's medians within 5% of the kernel time, the same
           ranking
  crash    a fake flash-attn whose kernel dies inside a CUDA driver call (cuMemcpyDtoH to an
           invalid host address), and one that trips a device-side assert: contained, and
           flash-attn-4 after it still passes
  cost     benchmarks/bench_kernels.py: what the default smoke set adds to check, as a ratio
           to import torch + the family imports

$OUT receives three files: kernels-run.tar.gz (every output), summary.json (each step's
verdict) and bench.txt; the comparisons are printed to stdout as well.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from kernel_timing import compare, comparison_lines, independent_timing

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
STEPS = ("default", "full", "compile", "bench", "crash", "cost")
MUST_PASS = ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math", "fa4")
# Seconds each step may take at most (an H200 took: default 21, compile 19, bench 51).
# cost: the family probe, then each of the three commands once, then one snapshot (about 100 s).
LIMITS = {"default": 50, "full": 420, "compile": 45, "bench": 100, "crash": 70, "cost": 200}


class StepTimeout(Exception):
    pass


def run_limited(cmd: List[str], env: Dict[str, str], deadline: float,
                stdin: Optional[str] = None) -> subprocess.CompletedProcess[str]:
    """Run cmd in its own process group; past the deadline the whole group is killed."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(stdin, timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        for pid in descendants(proc.pid):  # fadoctor's workers run in sessions of their own
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise StepTimeout(f"{' '.join(cmd[1:4])}: past the step's time limit") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def descendants(root: int) -> List[int]:
    """Every process below `root` (from /proc), children before grandchildren."""
    parents: Dict[int, List[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        children = parents.get(todo.pop(0), [])
        found.extend(children)
        todo.extend(children)
    return found


class Machine:
    """How to run fadoctor here, where its outputs go, and the current step's deadline."""

    def __init__(self, work: Path, deps: str, fa4: str) -> None:
        self.out, self.deps, self.fa4 = work, deps, fa4
        self.deadline = float("inf")
        self.cost_runs = 1

    def env(self, extra: str = "") -> Dict[str, str]:
        parts = [str(SRC), self.deps, extra, self.fa4]
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
        return env

    def run(self, cmd: List[str], env: Optional[Dict[str, str]] = None,
            stdin: Optional[str] = None) -> subprocess.CompletedProcess[str]:
        return run_limited(cmd, env or self.env(), self.deadline, stdin)

    def fadoctor(self, name: str, *args: str, extra: str = "") -> Dict[str, Any]:
        """Run `python3 -m fadoctor args`; stdout to OUT/name, stderr beside it."""
        start = time.perf_counter()
        done = self.run([sys.executable, "-m", "fadoctor", *args], self.env(extra))
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
    """Per target: the case statuses, who refused the not-applicable ones, or the failure."""
    out: Dict[str, Any] = {}
    for target, probe in ((facts.get(kind) or {}).get("targets") or {}).items():
        data = probe.get("data")
        if data is None:
            out[target] = {"failure": probe.get("failure")}
            continue
        counts: Dict[str, int] = {}
        refused, expanded = [], []
        for case in data.get("cases", []):
            counts[case["status"]] = counts.get(case["status"], 0) + 1
            if case["status"] == "not_applicable":
                refused.append({"by": case.get("refused_by"), "reason": case.get("reason")})
            if case.get("kv_expanded"):
                expanded.append(case["status"])
        out[target] = {"cases": counts, "refused": refused, "kv_expanded": expanded,
                       "skipped": data.get("skipped"), "first_call": data.get("first_call"),
                       "context_lost": data.get("context_lost", False)}
    return out


def passes(summary: Dict[str, Any]) -> bool:
    """Every target that must pass ran cases, none failed, at least one passed, and each case
    not applicable was refused by the target's own eligibility check (not by the call)."""
    for target in MUST_PASS:
        found = summary.get(target) or {}
        cases = found.get("cases") or {}
        if not cases.get("passed") or any(cases.get(s) for s in ("wrong", "nonfinite", "error")):
            return False
        if any(r.get("by") != "check" for r in found.get("refused") or []):
            return False
    return True


def proven(summary: Dict[str, Any]) -> Dict[str, str]:
    """How the default set proved each target: 'as asked' or 'with the KV heads expanded'."""
    out = {}
    for target in MUST_PASS:
        found = summary.get(target) or {}
        passed = (found.get("cases") or {}).get("passed", 0)
        via = "passed" in (found.get("kv_expanded") or [])
        out[target] = ("not proven" if not passed else "with the KV heads expanded"
                       if via and passed == 1 else "as asked")
    return out


def step_default(m: Machine) -> Dict[str, Any]:
    run = m.snapshot("kernels-default", "--kernels", "default")
    found = statuses(run.pop("facts"))
    print("default: " + json.dumps(proven(found)), flush=True)
    return {**run, "targets": found, "proven": proven(found), "ok": passes(found)}


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
    render = ("import json,sys; from fadoctor.bench.run import BenchReport; "
              "from fadoctor.render.bench import render_bench_text; "
              "print(render_bench_text(BenchReport.model_validate(json.load(sys.stdin)), 110), "
              "end='')")
    text = m.run([sys.executable, "-c", render], stdin=json.dumps(report)).stdout
    (m.out / "bench.txt").write_text(text, encoding="utf-8")
    result = {**run, **compare(report, _independent(m, report))}
    for line in comparison_lines(result):
        print(line, flush=True)
    return result


def _independent(m: Machine, report: Dict[str, Any]) -> Dict[str, Any]:
    """The child timing, with its compile caches in a temporary folder (removed)."""
    with tempfile.TemporaryDirectory(prefix="fadoctor-jit-") as cache:
        env = m.env()
        for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUTE_DSL_CACHE_DIR",
                     "CUDA_CACHE_PATH", "TMPDIR"):
            env[name] = os.path.join(cache, name.lower())
            os.makedirs(env[name])
        done = m.run([sys.executable, __file__, "--independent"], env, json.dumps(report))
    (m.out / "independent.stderr").write_text(done.stderr, encoding="utf-8")
    (m.out / "independent.json").write_text(done.stdout, encoding="utf-8")
    if done.returncode != 0:
        print("bench: the independent timing failed: " + done.stderr[-1500:], flush=True)
        return {}
    result: Dict[str, Any] = json.loads(done.stdout)
    return result


def step_crash(m: Machine) -> Dict[str, Any]:
    if not (ROOT / "tests" / "helpers" / "fake_family.py").is_file():
        return {"error": "run from a full checkout: tests/helpers/fake_family.py is missing"}
    if str(ROOT) not in sys.path:
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
    """bench_kernels.py in a child, so that the step's time limit holds for it too."""
    script = str(Path(__file__).parent / "bench_kernels.py")
    done = m.run([sys.executable, script, "--runs", str(m.cost_runs), "--no-warm", "--json"])
    (m.out / "cost.json").write_text(done.stdout, encoding="utf-8")
    (m.out / "cost.stderr").write_text(done.stderr, encoding="utf-8")
    if done.returncode != 0:
        return {"exit": done.returncode, "error": done.stderr[-1500:]}
    result: Dict[str, Any] = json.loads(done.stdout)
    print("cost: " + json.dumps({k: result.get(k) for k in (
        "median_s", "smoke_adds_s", "fa4_first_call_jit_s", "ratio_check_default_to_imports")}),
        flush=True)
    return result


STEP_FUNCTIONS: Dict[str, Callable[[Machine], Dict[str, Any]]] = {
    "default": step_default, "full": step_full, "compile": step_compile, "bench": step_bench,
    "crash": step_crash, "cost": step_cost}


def run_step(machine: Machine, name: str, budget_end: float) -> Dict[str, Any]:
    start = time.perf_counter()
    machine.deadline = min(time.monotonic() + LIMITS[name], budget_end)
    try:
        result = STEP_FUNCTIONS[name](machine)
    except Exception as exc:  # one step's failure (or time limit) must not lose the others'
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["step_seconds"] = round(time.perf_counter() - start, 1)
    return result


def pack(work: Path, out: Path, summary: Dict[str, Any]) -> None:
    """$OUT: kernels-run.tar.gz (everything), summary.json and bench.txt beside it."""
    (work / "summary.json").write_text(json.dumps(summary, indent=2, default=str),
                                       encoding="utf-8")
    with tarfile.open(out / "kernels-run.tar.gz.part", "w:gz") as tar:
        tar.add(work, arcname="kernels-run")
    os.replace(out / "kernels-run.tar.gz.part", out / "kernels-run.tar.gz")
    for name in ("summary.json", "bench.txt"):
        if (work / name).is_file():
            shutil.copyfile(work / name, out / name)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--deps", default="", help="PYTHONPATH entries with fadoctor's deps")
    parser.add_argument("--fa4", default="", help="PYTHONPATH entries that add flash-attn-4")
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--budget", type=float, default=230.0, help="seconds for all steps")
    parser.add_argument("--cost-runs", type=int, default=1, help="repetitions of the cost step")
    parser.add_argument("--independent", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.independent:  # the child of step_bench
        print(json.dumps(independent_timing(json.load(sys.stdin))))
        return 0
    steps = [s for s in args.steps.split(",") if s]
    unknown = [s for s in steps if s not in STEP_FUNCTIONS]
    if unknown:
        parser.error(f"unknown steps: {', '.join(unknown)} (known: {', '.join(STEPS)})")
    out = Path(os.environ["OUT"])
    out.mkdir(parents=True, exist_ok=True)
    budget_end = time.monotonic() + args.budget
    summary: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="fadoctor-gpu-") as tmp:
        machine = Machine(Path(tmp), args.deps, args.fa4)
        machine.cost_runs = args.cost_runs
        for name in steps:
            summary[name] = run_step(machine, name, budget_end)
            pack(machine.out, out, summary)
            print(name, json.dumps({k: v for k, v in summary[name].items()
                                    if k in ("ok", "exit", "error", "step_seconds", "proven",
                                             "ranking_conflicts")}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
