"""The rank agent for real: CPU ranks started by torchrun, or by srun's variables set by hand, gather
over gloo's store; a rank made to differ is named; a rank killed mid-gather is reported."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping

import pytest
from tests.helpers.broken import (
    C10_ERROR_CXX11_ABI,
    C10_ERROR_OLD_ABI,
    fake_flash_attn,
    fake_module_dist,
    requires_gcc,
    requires_torch,
)
from tests.helpers.ports import free_port

from fadoctor.distributed.collect import AGENT, read_facts_dir
from fadoctor.distributed.evaluate import evaluate_job
from fadoctor.in_target.gather import Channel
from fadoctor.matrix import load_matrix
from fadoctor.report import CheckResult, Status

pytestmark = [pytest.mark.slow, requires_torch]
LAUNCHER = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
            "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "VIRTUAL_ENV",
            "CONDA_PREFIX", "PYTHONPATH")


def clean_env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER and not k.startswith("SLURM_")}
    env.update(extra)
    return env


def agent(out: Path, env: Mapping[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-B", str(AGENT), "--out", str(out), *args],
                            env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def result(out: Path, check_id: str) -> CheckResult:
    report = evaluate_job(read_facts_dir(out), load_matrix())
    return next(c for c in report.merged.checks if c.id == check_id)


def test_torchrun_two_cpu_ranks_check_distributed(tmp_path: Path) -> None:
    out = tmp_path / "facts"
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), "-m", "fadoctor", "check", "--distributed",
         "--facts-dir", str(out), "--format", "json"],
        capture_output=True, text=True, env=clean_env(), timeout=400, check=False)
    report = json.loads(done.stdout)  # rank 0 prints the job's report; rank 1 prints nothing
    assert done.returncode != 0  # a CPU job fails FAD101/FAD103: rank 0 exits 1, torchrun too
    assert sorted(p.name for p in out.iterdir()) == ["gathered.json", "rank-00000.json",
                                                     "rank-00001.json"]
    assert report["world_size"] == 2 and [n["ranks"] for n in report["nodes"]] == [[0, 1]]
    checks = {c["id"]: c for c in report["merged"]["checks"]}
    assert checks["FAD201"]["status"] == "passed"
    assert checks["FAD202"]["status"] == "passed", checks["FAD202"]
    assert checks["FAD206"]["status"] == "passed", checks["FAD206"]
    assert checks["FAD207"]["status"] == "skipped"
    # Why NCCL did not run: the ranks have no GPU (whichever of the two the ranks said first).
    reason = checks["FAD207"]["skipped_reason"]
    assert "NCCL" in reason or "no GPU" in reason, reason
    # The kernel smoke tests need a GPU: on this CPU job, every rank says why they did not run.
    assert checks["FAD140"]["skipped_reason"] == ("needs a GPU to run kernels on: no NVIDIA "
                                                  "driver on this rank's machine")
    rows = [b for b in report["bandwidth"] if b["backend"] == "gloo"]
    assert {(b["op"], b["bytes"]) for b in rows} == {
        (op, size) for op in ("all_reduce", "all_gather") for size in (1 << 16, 1 << 20)}
    assert all(b["correct"] and b["ranks"] == 2 and b["busbw_gbps"] > 0 for b in rows)
    gathered = json.loads((out / "gathered.json").read_text())
    assert [r["identity"]["launcher"] for r in gathered["ranks"]] == ["torchrun", "torchrun"]


@requires_gcc
def test_a_rank_with_another_flash_attn_build_is_named(tmp_path: Path) -> None:
    # Two builds of flash-attn 2.6.3, one per rank: same version, other extension bytes.
    port, out = str(free_port()), tmp_path / "facts"
    procs = []
    for r in (0, 1):
        site = fake_flash_attn(tmp_path / f"site{r}", version="2.6.3",
                               symbol=C10_ERROR_CXX11_ABI if r == 0 else C10_ERROR_OLD_ABI)
        env = clean_env(SLURM_PROCID=str(r), SLURM_NTASKS="2", SLURM_LOCALID=str(r),
                        SLURM_NODEID="0", SLURM_JOB_ID="77", MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=port, PYTHONPATH=str(site))
        procs.append(agent(out, env, "--no-collectives", "--wait", "120"))
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stdout.read() if p.stdout else ""
    software = result(out, "FAD202")
    assert software.status == Status.FAILED
    line = next(f for f in software.findings if f.subject and f.subject.startswith("extension"))
    assert line.subject == "extension flash_attn_2_cuda"
    assert line.message.startswith("extension flash_attn_2_cuda differs: ")
    assert "on rank 0 (node 0)" in line.message and "on rank 1 (node 0)" in line.message
    assert json.loads((out / "gathered.json").read_text())["ranks"][1]["identity"]["launcher"] \
        == "slurm"


def descendants(pid: int) -> List[int]:
    """Every process below `pid`, from /proc (the agent's children run in their own sessions)."""
    parents: Dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    out, frontier = [], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        out += frontier
    return out


def wait_until_hung(marker: Path, port: str, proc: subprocess.Popen[str], seconds: float
                    ) -> None:
    """Until rank 1 has announced itself in the job's store and hangs in its probes."""
    import datetime

    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", int(port), None, False, datetime.timedelta(seconds=60))
    channel = Channel(store, "fadoctor/job/", 0)
    deadline = time.monotonic() + seconds
    while not (marker.exists() and channel.beats(1) > 0):
        assert proc.poll() is None and time.monotonic() < deadline, "the rank never hung"
        time.sleep(0.2)


def test_a_rank_killed_mid_gather_is_reported_not_waited_for(tmp_path: Path) -> None:
    port, out, marker = str(free_port()), tmp_path / "facts", tmp_path / "hung"
    # Rank 1's flash_attn hangs on import: the rank is alive, announced, and still probing.
    site = fake_module_dist(tmp_path / "site", "flash-attn", "2.6.3", "flash_attn",
                            f"import time\nopen({str(marker)!r}, 'w').close()\ntime.sleep(600)\n")
    ranks: Dict[int, Any] = {}
    for r in (0, 1):
        env = clean_env(RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=port, **({"PYTHONPATH": str(site)} if r == 1 else {}))
        stages = "host,packages,files" if r == 0 else "host,packages,fa2"
        ranks[r] = agent(out, env, "--stages", stages, "--stale", "3",
                         "--collective-timeout", "16")
    wait_until_hung(marker, port, ranks[1], 240)
    killed = time.monotonic()
    for pid in [ranks[1].pid, *descendants(ranks[1].pid)]:
        _kill(pid)
    ranks[1].wait(timeout=30)
    assert ranks[0].wait(timeout=120) == 0, ranks[0].stdout.read() if ranks[0].stdout else ""
    assert time.monotonic() - killed < 60  # given up on after its silence, not waited for
    gathered = json.loads((out / "gathered.json").read_text())
    assert [(m["rank"], m["state"]) for m in gathered["missing"]] == [(1, "lost")]
    assert gathered["missing"][0]["identity"]["host"] == socket.gethostname()
    reported = result(out, "FAD201")
    assert reported.status == Status.FAILED
    assert reported.findings[0].message.startswith(
        f"rank 1 started on {socket.gethostname()} but fell silent")


def test_under_torchrun_a_killed_rank_is_reported_by_rank_0_when_the_launcher_stops_it(
        tmp_path: Path) -> None:
    # torchrun stops every rank (SIGTERM) when one dies: rank 0 then writes what it has.
    out, marker = tmp_path / "facts", tmp_path / "hung"
    site = fake_module_dist(tmp_path / "site", "flash-attn", "2.6.3", "flash_attn",
                            "import os, time\nif os.environ['RANK'] == '1':\n"
                            f"    open({str(marker)!r}, 'w').close()\n    time.sleep(600)\n")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
         str(free_port()), str(AGENT), "--out", str(out), "--stages", "host,packages,fa2"],
        env=clean_env(PYTHONPATH=str(site)), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while not marker.exists():
        assert launcher.poll() is None and time.monotonic() < deadline, "rank 1 never hung"
        time.sleep(0.2)
    rank1 = next(pid for pid in descendants(launcher.pid) if _environ(pid).get("RANK") == "1"
                 and str(AGENT) in _cmdline(pid))
    for pid in [rank1, *descendants(rank1)]:
        _kill(pid)
    assert launcher.wait(timeout=120) != 0
    gathered = json.loads((out / "gathered.json").read_text())
    assert gathered["interrupted"] == "SIGTERM"
    assert [(m["rank"], m["state"]) for m in gathered["missing"]] == [(1, "interrupted")]
    reported = result(out, "FAD201")
    assert reported.findings[0].message.startswith("rank 1 had not reported")
    assert reported.findings[0].message.endswith("(rank 0 got SIGTERM)")


def _environ(pid: int) -> Dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(e.decode().split("=", 1) for e in raw.split(b"\0") if b"=" in e)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_a_rank_that_never_starts_is_reported_after_the_wait(tmp_path: Path) -> None:
    out = tmp_path / "facts"
    env = clean_env(RANK="0", WORLD_SIZE="3", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=str(free_port()))
    rank0 = agent(out, env, "--stages", "host", "--no-collectives", "--wait", "3")
    assert rank0.wait(timeout=120) == 0, rank0.stdout.read() if rank0.stdout else ""
    gathered = json.loads((out / "gathered.json").read_text())
    assert [(m["rank"], m["state"]) for m in gathered["missing"]] == [
        (1, "never_arrived"), (2, "never_arrived")]
    reported = result(out, "FAD201")
    assert reported.findings[0].message.startswith("ranks 1-2 never reached the job's store")


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
