"""Benchmark the distributed check against one GPU's `fadoctor check`, and how it grows with ranks.

    python benchmarks/bench_distributed.py [--python PATH] [--ranks 1,2,4,8] [--nodes 2]
                                           [--runs 3] [--json]

Baseline: `fadoctor check --python PATH` (one rank's work on one GPU). Distributed: the job's
launcher (`python -m torch.distributed.run --nproc-per-node N`, PATH's own torchrun) running the
rank agent on N ranks, then `fadoctor check --facts-dir` on what rank 0 gathered. With
`--nodes K`, the same N ranks also run as K simulated nodes (K launcher invocations on this host,
node ranks 0..K-1, a localhost rendezvous) to show what crossing nodes adds. Runs are
interleaved (baseline, then each N) so that all see the same machine state.

Reported, as medians: rank 0's own time from its start to the gathered file (`agent_s`: every
rank probes and tests the collectives in parallel, then rank 0 gathers), its wait for the other
ranks after its own record (`gather_s`), `ratio` = agent_s / baseline — what checking the job
costs next to checking one GPU —, the report read from the gathered folder afterwards
(`report_s`; `check --distributed` overlaps it with the probes), and the launcher's wall time
(`launcher_s`, which includes torchrun's own start-up: the job's cost, not fadoctor's).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

SRC = Path(__file__).resolve().parents[1] / "src"
AGENT = SRC / "fadoctor" / "target" / "rank_agent.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(cmds: Sequence[Sequence[str]], env: Dict[str, str], ok: Sequence[int] = (0, 1)) -> float:
    """Wall seconds until every command (started together) has exited."""
    start = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
             for c in cmds]
    codes = [p.wait(timeout=900) for p in procs]
    elapsed = time.perf_counter() - start
    if any(code not in ok for code in codes):
        raise SystemExit(f"{' '.join(cmds[0])} exited with {codes}")
    return elapsed


def fadoctor(*args: str) -> List[str]:
    return [sys.executable, "-m", "fadoctor", *args, "--format", "json"]


def launchers(python: str, ranks: int, nodes: int, out: Path) -> List[List[str]]:
    """One torchrun per (simulated) node, all on this host."""
    port = str(free_port())
    agent = [str(AGENT), "--out", str(out)]
    if nodes == 1:
        return [[python, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
                 "--master-port", port, *agent]]
    return [[python, "-m", "torch.distributed.run", "--nnodes", str(nodes), "--node-rank",
             str(n), "--nproc-per-node", str(ranks // nodes), "--master-addr", "127.0.0.1",
             "--master-port", port, *agent] for n in range(nodes)]


def one_job(python: str, ranks: int, nodes: int, env: Dict[str, str]) -> Dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        launcher = timed(launchers(python, ranks, nodes, out), env, ok=(0,))
        gathered = json.loads((out / "gathered.json").read_text())
        if gathered["missing"]:
            raise SystemExit(f"ranks missing: {gathered['missing']}")
        report = timed([fadoctor("check", "--facts-dir", str(out))], env)
    return {"launcher_s": launcher, "agent_s": gathered["seconds"],
            "gather_s": gathered["gather_seconds"], "report_s": report}


def median(rows: List[Dict[str, float]]) -> Dict[str, float]:
    return {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}


def measure(python: str, ranks: List[int], nodes: int, runs: int, env: Dict[str, str]
            ) -> Dict[str, Any]:
    baseline: List[float] = []
    jobs: Dict[str, List[Dict[str, float]]] = {}
    timed([fadoctor("check", "--python", python)], env)  # warm the page cache
    for _ in range(runs):
        baseline.append(timed([fadoctor("check", "--python", python)], env))
        for n in ranks:
            shapes = [(n, 1)] + ([(n, nodes)] if nodes > 1 and n % nodes == 0 and n >= nodes
                                 else [])
            for total, k in shapes:
                jobs.setdefault(f"{total} ranks, {k} node(s)", []).append(
                    one_job(python, total, k, env))
    base = statistics.median(baseline)
    out: Dict[str, Any] = {"python": python, "runs": runs, "check_median_s": round(base, 3),
                           "check_s": [round(x, 3) for x in baseline], "jobs": {}}
    for name, rows in jobs.items():
        m = median(rows)
        m["ratio"] = round(m["agent_s"] / base, 3)
        m["launcher_ratio"] = round(m["launcher_s"] / base, 3)
        out["jobs"][name] = m
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch")
    parser.add_argument("--ranks", default="1,2,4,8", help="rank counts, comma-separated")
    parser.add_argument("--nodes", type=int, default=2, help="also run as this many nodes")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    summary = measure(args.python, [int(r) for r in args.ranks.split(",")], args.nodes,
                      args.runs, env)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"runs: {args.runs}, interleaved; target interpreter: {args.python}")
    print(f"  fadoctor check (one rank)          median {summary['check_median_s']:.2f} s")
    for name, m in summary["jobs"].items():
        print(f"  {name:<22} agent {m['agent_s']:6.2f} s  ratio {m['ratio']:.2f}x  "
              f"(gather {m['gather_s']:5.2f} s; then report {m['report_s']:5.2f} s; "
              f"launcher wall {m['launcher_s']:6.2f} s, {m['launcher_ratio']:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
