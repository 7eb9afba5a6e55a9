"""The rank agent: what the job's launcher runs on every rank, in the target interpreter.

    torchrun --nproc-per-node 8 $(fadoctor rank-script) --out facts-dir
    srun --ntasks-per-node 8 python $(fadoctor rank-script) --out facts-dir

Started by path through `rank_agent.py` (fadoctor need not be installed where it runs). It reads
this rank's place from the launcher (`place.py`) and, in parallel: runs `check`'s stages in one
worker and the `collective` stage in another, both through fadoctor's runner in a child of this
interpreter (crash-isolated and timed: a stage that kills or hangs its worker is a recorded
failure); reads the driver; and joins the job's c10d store. It writes its record to
`<out>/rank-NNNNN.json` and sends it to rank 0 (`gather.py`); rank 0 writes every record, and the
ranks that never came, to `<out>/gathered.json`. Every rank exits 0 (a launcher stops the whole
job when one rank fails): the verdict is `fadoctor check --facts-dir <out>`'s.
"""

import argparse
import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from . import gather
from .place import LaunchError, identity, matching, run_id
from .registry import names
from .tables import DISTRIBUTED_ENVIRONMENT, TAIL

RECORD_FORMAT = "fadoctor-rank/1"
GATHER_FORMAT = "fadoctor-gather/1"
# The nvidia-smi query fadoctor.probes.driver parses (parse_smi_csv); a test keeps them equal.
SMI_QUERY = "index,name,compute_cap,memory.total,uuid,driver_version"
STOP = threading.Event()  # set by SIGTERM/SIGINT: write what we have and leave
# fadoctor's runner, run by path in this interpreter (this package's sibling in fadoctor).
RELAY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probes",
                     "relay.py")


def driver_raw() -> Dict[str, Any]:
    """The driver as this rank's machine reports it, raw: the parent parses it."""
    out: Dict[str, Any] = {"procfs": None, "smi": None, "cuda_driver": None}
    try:
        with open("/proc/driver/nvidia/version") as fh:
            out["procfs"] = fh.read(4096)
    except OSError:
        pass
    try:  # cuDriverGetVersion needs no cuInit: it reads the version of libcuda.so itself
        version = ctypes.c_int(0)
        if ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(version)) == 0:
            out["cuda_driver"] = version.value
    except (OSError, AttributeError):
        pass
    exe = shutil.which("nvidia-smi")
    if exe is not None:
        try:
            done = subprocess.run([exe, "--query-gpu=" + SMI_QUERY, "--format=csv,noheader,nounits"],
                                  capture_output=True, text=True, timeout=15, check=False)
            out["smi"] = {"returncode": done.returncode, "stdout": done.stdout[-20000:],
                          "stderr": done.stderr[-TAIL:]}
        except (OSError, subprocess.TimeoutExpired) as exc:
            out["smi"] = {"error": "%s: %s" % (type(exc).__name__, exc)}
    return out


def hash_files(paths: List[str]) -> List[Dict[str, Any]]:
    """sha256 of each compiled extension: two ranks with one version but other builds differ."""
    out = []
    for path in paths:
        entry: Dict[str, Any] = {"path": path}
        try:
            digest = hashlib.sha256()
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            entry.update(sha256=digest.hexdigest(), size=os.path.getsize(path))
        except OSError as exc:
            entry["error"] = "%s: %s" % (type(exc).__name__, exc)
        out.append(entry)
    return out


class Lane:
    """Stages in one worker, run by fadoctor's runner in a child of this interpreter (the relay,
    probes/relay.py, run by path): a stage that crashes or hangs its worker is a recorded
    failure and the worker restarts past it; waiting gives way to SIGTERM."""

    def __init__(self, stages: List[str], timeout: Optional[float],
                 options: Optional[Dict[str, str]] = None, kernels: Optional[str] = None,
                 env: Optional[Dict[str, str]] = None) -> None:
        self.stages = stages
        request = {"stages": stages, "timeouts": {s: timeout for s in stages} if timeout else {},
                   "options": options or {}, "env": dict(os.environ if env is None else env),
                   "kernels": kernels,  # the relay runs `kernels` (a grid) as `check` does
                   "parent": os.getpid()}  # the relay ends when this agent does
        self._proc = subprocess.Popen([sys.executable, "-B", RELAY], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      start_new_session=True)
        self._answer: List[bytes] = []
        self._thread = threading.Thread(target=lambda: self._answer.extend(
            self._proc.communicate(json.dumps(request).encode())), daemon=True)
        self._thread.start()

    def wait(self) -> Dict[str, Any]:
        """Each stage's outcome as plain data; a stage cut short is a failure that says why."""
        while self._thread.is_alive() and not STOP.is_set():
            self._thread.join(0.2)
        why = "not finished: the launcher stopped this rank"
        outcomes: Dict[str, Any] = {}
        if not self._thread.is_alive():
            try:
                outcomes = json.loads(self._answer[0].decode("utf-8"))
            except (ValueError, IndexError):
                why = "fadoctor's runner failed (status %s): %s" % (
                    self._proc.returncode, self._answer[1].decode("utf-8", "replace")[-TAIL:]
                    if len(self._answer) > 1 else "")
        else:
            with contextlib.suppress(OSError):
                os.killpg(self._proc.pid, signal.SIGKILL)
        failed = {"ok": False, "seconds": 0.0, "failure": {"kind": "error", "reason": why}}
        return {stage: outcomes.get(stage, failed) for stage in self.stages}


def own_gpu(environ: Dict[str, str], local_rank: int) -> Tuple[Optional[Dict[str, str]], str]:
    """The environment that shows the kernel tests this rank's own GPU alone (the LOCAL_RANK-th
    that CUDA_VISIBLE_DEVICES leaves), or None and why there is none."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    entries = [str(local_rank)] if visible is None else [
        e.strip() for e in visible.split(",") if e.strip()][local_rank:local_rank + 1]
    if not entries:
        return None, "LOCAL_RANK %d has no GPU among CUDA_VISIBLE_DEVICES=%r" % (local_rank,
                                                                               visible)
    return dict(environ, CUDA_VISIBLE_DEVICES=entries[0]), ""


def kernel_lane(grid: str, timeout: Optional[float], local_rank: int) -> Any:
    """The attention smoke tests on this rank's own GPU (as `check --kernels GRID`), or why not."""
    if grid == "none":
        return None
    if not os.path.exists("/proc/driver/nvidia/version"):  # not a GPU node: no lanes to start
        return {"smoke": grid, "stages": {}, "skipped": "no NVIDIA driver on this rank's machine"}
    env, why = own_gpu(dict(os.environ), local_rank)
    if env is None:
        return {"smoke": grid, "stages": {}, "skipped": why}
    return Lane(names(groups=("smoke",)), timeout, kernels=grid, env=env)


def collective_record(outcome: Dict[str, Any], channel: Optional[gather.Channel],
                      place: Dict[str, Any]) -> Dict[str, Any]:
    """The collective stage's outcome, with where this rank was and who never arrived there
    when it failed (read from the store, where the stage marked each phase)."""
    data = outcome.get("data") or {}
    record = {"device": data.get("device"), "ops": data.get("ops", []),
              "skipped": data.get("skipped", []), "phase": "done" if outcome["ok"] else "start",
              "seconds": outcome["seconds"], "failure": outcome.get("failure")}
    if outcome["ok"] or channel is None:
        return record
    rank = place["rank"]
    with contextlib.suppress(Exception):  # the store is gone: nobody to ask
        if channel.has("coll/phase", rank):
            record["phase"] = channel.read("coll/phase", rank)
            record["never_arrived"] = channel.absent("coll/at/" + record["phase"],
                                                     list(range(place["world_size"])))
        if channel.has("coll/info", rank):
            record["device"] = channel.read("coll/info", rank)[1]
    return record


def _arguments(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fadoctor rank agent", description=(
        "Probe this rank and gather every rank's facts to rank 0 (read them with "
        "`fadoctor check --facts-dir OUT`)."))
    parser.add_argument("--out", default="fadoctor-facts", help="folder for the JSON records")
    parser.add_argument("--timeout", type=float, help="seconds each probe stage may take")
    parser.add_argument("--stages", help="comma-separated probe stages (default: all)")
    parser.add_argument("--collective-timeout", type=float, default=120.0,
                        help="seconds the collective smoke test may take (default 120)")
    parser.add_argument("--no-collectives", action="store_true",
                        help="skip the all_reduce/all_gather smoke test")
    parser.add_argument("--kernels", choices=("none", "default", "full"), default="default",
                        help="the attention kernel smoke tests on this rank's GPU, as for check")
    parser.add_argument("--wait", type=float, default=120.0, help="seconds from its start rank 0 "
                        "waits for a rank that never announces itself (default 120)")
    parser.add_argument("--stale", type=float, default=20.0, help="seconds of silence after "
                        "which an announced rank counts as lost (default 20)")
    parser.add_argument("--deadline", type=float, default=900.0,
                        help="seconds from its start rank 0 waits for every record (default 900)")
    parser.add_argument("--run-id", help="key prefix in the store (default: the launcher's job id)")
    parser.add_argument("--parent", type=int, help="stop when the process PID ends "
                        "(`fadoctor check --distributed` passes its own)")
    parser.add_argument("--discard-out", action="store_true", help="with --parent: remove --out "
                        "when the parent has ended (a temporary folder nobody will read)")
    return parser.parse_args(argv)


def follow_parent(parent: Optional[int]) -> None:
    """End with the process that started this agent, even when it dies by SIGKILL: Linux sends
    SIGTERM on its death (PR_SET_PDEATHSIG), and a watcher notices the new parent elsewhere;
    either stops the probes as the launcher's SIGTERM would."""
    if parent is None:
        return
    with contextlib.suppress(Exception):  # not Linux, or no libc: the watcher alone
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG

    def watch() -> None:
        while not STOP.wait(0.5):
            if os.getppid() != parent:
                STOP.set()

    threading.Thread(target=watch, daemon=True).start()


def orphaned(args: argparse.Namespace) -> bool:
    """The parent named by --parent has ended (checked after the signal's handler is set: a
    death before then shows as another parent); a temporary --out goes with it."""
    if args.parent is None or os.getppid() == args.parent:
        return False
    if args.discard_out:
        shutil.rmtree(args.out, ignore_errors=True)
    return True


def _write(path: str, data: Dict[str, Any]) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    temporary = "%s.%d.tmp" % (path, os.getpid())
    with open(temporary, "w") as fh:
        json.dump(data, fh, indent=1, default=str)
    os.replace(temporary, path)


def _connect(spec: Dict[str, Any], timeout: float) -> Tuple[Optional[gather.Channel], Optional[str]]:
    """The store, joined in a thread: a SIGTERM, SIGINT or SIGHUP stops the wait at once (the
    store's own wait cannot be interrupted)."""
    got: List[Tuple[Optional[gather.Channel], Optional[str]]] = []

    def join() -> None:
        try:
            got.append((gather.Channel.connect(spec, timeout), None))
        except Exception as exc:  # unreachable master, port taken, torch missing or broken
            got.append((None, ("%s: %s" % (type(exc).__name__, exc))[:TAIL]))

    worker = threading.Thread(target=join, daemon=True)
    worker.start()
    while worker.is_alive() and not STOP.is_set():
        worker.join(0.2)
    return got[0] if got else (None, "stopped before the job's store was reached")


def probe_rank(args: argparse.Namespace, spec: Dict[str, Any]) -> Any:
    """This rank's record, the store channel and the heartbeat: everything runs in parallel."""
    started = time.monotonic()
    probes = Lane(args.stages.split(",") if args.stages else names(), args.timeout)
    collective = None
    if not args.no_collectives:
        child = dict(spec, timeout=max(args.collective_timeout - 15.0, args.collective_timeout / 2))
        collective = Lane(["collective"], args.collective_timeout,
                          {"rank_spec": json.dumps(child)})
    kernels = kernel_lane(args.kernels, args.timeout, spec.get("local_rank") or 0)
    driver: Dict[str, Any] = {}
    reader = threading.Thread(target=lambda: driver.update(driver_raw()), daemon=True)
    reader.start()
    channel, store_error = _connect(spec, args.wait)
    public = {k: v for k, v in spec.items() if k != "prefix"}
    beat = None
    if channel is not None:
        channel.announce(public)
        beat = gather.Heartbeat(channel)
    stages = probes.wait()
    files = (stages.get("files") or {}).get("data") or {}
    record: Dict[str, Any] = {
        "format": RECORD_FORMAT, "identity": public, "python": sys.executable,
        "stages": stages,
        "collective": collective_record(collective.wait()["collective"], channel, spec)
        if collective else None,
        "extensions": hash_files([e["path"] for e in files.get("extensions", [])]),
        "environment": matching(dict(os.environ), DISTRIBUTED_ENVIRONMENT),
        "store_error": store_error,
        "kernels": kernels if not isinstance(kernels, Lane) else {
            "smoke": args.kernels, "stages": kernels.wait(), "skipped": None},
    }
    reader.join(30)
    record["driver"] = driver or None
    record["seconds"] = round(time.monotonic() - started, 3)
    return record, channel, beat


def main(argv: List[str]) -> int:
    args = _arguments(argv)
    try:
        place = identity(dict(os.environ))
    except LaunchError as exc:
        sys.stderr.write("fadoctor rank agent: error: %s\n" % exc)
        return 2
    try:  # the folder the records go to, made and proved writable before any probe runs
        os.makedirs(args.out, exist_ok=True)
        if not os.access(args.out, os.W_OK | os.X_OK):
            raise PermissionError("not writable")
    except OSError as exc:
        sys.stderr.write("fadoctor rank agent: error: --out %r is not a folder it can write to: "
                         "%s\n" % (args.out, exc.strerror or exc))
        return 2
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: STOP.set())
    follow_parent(args.parent)
    if orphaned(args):
        return 0
    spec = dict(place, prefix="fadoctor/%s/" % (args.run_id or run_id(dict(os.environ))))
    started = time.monotonic()
    record, channel, beat = probe_rank(args, spec)
    if orphaned(args):  # nobody to read the record: write nothing
        return 0
    rank = place["rank"]
    _write(os.path.join(args.out, "rank-%05d.json" % rank), record)
    if rank != 0:
        if channel is not None:
            try:
                channel.deliver(record)
            except Exception as exc:
                sys.stderr.write("fadoctor rank %d: could not deliver: %s\n" % (rank, exc))
        return 0
    gathering = gather.Gathering(place["world_size"], record, started)
    limits = gather.Limits(args.wait, args.stale, args.deadline)
    since = time.monotonic()
    interrupted = gather.gather(channel, gathering, limits, STOP.is_set)
    if beat is not None:
        beat.stop()
    if orphaned(args):
        return 0
    result = dict(gathering.result(interrupted, since), format=GATHER_FORMAT,
                  world_size=place["world_size"], run_id=spec["prefix"])
    path = os.path.join(args.out, "gathered.json")
    _write(path, result)
    sys.stderr.write("fadoctor: %d of %d rank(s) gathered into %s; read them with: fadoctor "
                     "check --facts-dir %s\n" % (len(result["ranks"]), place["world_size"], path,
                                                 args.out))
    return 0
