"""The rank agent: what the job's launcher runs on every rank, in the target interpreter.

    torchrun --nproc-per-node 8 $(fadoctor rank-script) --out facts-dir
    srun --ntasks-per-node 8 python $(fadoctor rank-script) --out facts-dir

Standard library only (torch is imported inside functions), Python 3.8 syntax, and fadoctor need
not be installed where it runs: it imports its siblings from its own folder. It reads this rank's
place from the launcher (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; srun's
SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) and, in parallel: runs the probe stages in a worker
(crash-isolated by fadoctor's runner: a stage that kills or hangs the worker is a recorded failure),
runs the collective smoke test in another child on this rank's GPU, and reads the driver. It
writes its record to `<out>/rank-NNNNN.json` and sends it to rank 0 over the job's c10d store
(fadoctor.probes.gather); rank 0 writes every record, and the ranks that never came, to
`<out>/gathered.json`. Every rank exits 0 (a launcher stops the whole job when one rank fails);
the verdict is `fadoctor check --facts-dir <out>`'s.
"""

import argparse
import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import types
from collections import deque
from typing import Any, Deque, Dict, List, Optional

RECORD_FORMAT = "fadoctor-rank/1"
GATHER_FORMAT = "fadoctor-gather/1"
# The nvidia-smi query fadoctor.probes.driver parses (parse_smi_csv); a test keeps them equal.
SMI_QUERY = "index,name,compute_cap,memory.total,uuid,driver_version"
# Environment variables that steer torch.distributed, NCCL and gloo (exact, or prefixes ending
# in "_"); the worker's host stage records those that steer CUDA, torch and flash-attention.
DISTRIBUTED_ENVIRONMENT = (
    "NCCL_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "TORCH_SYMM_MEM_", "GLOO_", "NVSHMEM_", "UCX_",
    "FI_", "OMP_NUM_THREADS", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING",
    "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE",
)
# (field, torchrun and env:// variable, srun variable)
_PLACE = (("rank", "RANK", "SLURM_PROCID"), ("world_size", "WORLD_SIZE", "SLURM_NTASKS"),
          ("local_rank", "LOCAL_RANK", "SLURM_LOCALID"), ("node_rank", "GROUP_RANK", "SLURM_NODEID"),
          ("local_world_size", "LOCAL_WORLD_SIZE", None))
_TAIL = 4000
STOP = threading.Event()  # set by SIGTERM/SIGINT: write what we have and leave


class LaunchError(Exception):
    """The environment is not a launcher's: one line for the user, exit status 2."""


def identity(environ: Dict[str, str]) -> Dict[str, Any]:
    """This rank's place in the job, from the launcher's environment variables."""
    slurm = "RANK" not in environ and "SLURM_PROCID" in environ
    out: Dict[str, Any] = {}
    for field, variable, slurm_variable in _PLACE:
        name = slurm_variable if slurm else variable
        raw = environ.get(name) if name else None
        try:
            out[field] = int(raw) if raw not in (None, "") else None
        except ValueError:
            raise LaunchError("%s=%r is not a number" % (name, raw)) from None
    if out["rank"] is None or out["world_size"] is None:
        raise LaunchError("RANK and WORLD_SIZE are not set: start this with the job's launcher "
                          "(torchrun; srun, which sets SLURM_PROCID and SLURM_NTASKS; or anything "
                          "that sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)")
    if not 0 <= out["rank"] < out["world_size"]:
        raise LaunchError("RANK %d is not below WORLD_SIZE %d" % (out["rank"], out["world_size"]))
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if not environ.get(name):
            hint = (": srun does not set it; export MASTER_ADDR=$(scontrol show hostnames "
                    "\"$SLURM_JOB_NODELIST\" | head -n 1) MASTER_PORT=29500" if slurm else "")
            raise LaunchError("%s is not set%s" % (name, hint))
    if not environ["MASTER_PORT"].isdigit():
        raise LaunchError("MASTER_PORT=%r is not a port number" % environ["MASTER_PORT"])
    out.update(host=socket.gethostname(), pid=os.getpid(),
               launcher="torchrun" if "TORCHELASTIC_RUN_ID" in environ else (
                   "slurm" if slurm else "env"),
               master_addr=environ["MASTER_ADDR"], master_port=int(environ["MASTER_PORT"]),
               agent_store=environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True")
    return out


def run_id(environ: Dict[str, str]) -> str:
    """A name every rank of this job computes alike, for the store's key prefix."""
    if environ.get("TORCHELASTIC_RUN_ID"):
        return environ["TORCHELASTIC_RUN_ID"]
    if environ.get("SLURM_JOB_ID"):
        return "%s.%s" % (environ["SLURM_JOB_ID"], environ.get("SLURM_STEP_ID", "0"))
    return "job"


def _own_package() -> None:
    """Make `fadoctor.probes` importable from this folder alone, fadoctor installed or not,
    without putting fadoctor's site-packages (pydantic, ...) on the target's path."""
    here = os.path.dirname(os.path.abspath(__file__))
    for name, path in (("fadoctor", os.path.dirname(here)), ("fadoctor.probes", here)):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [path]
            sys.modules[name] = module


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
                          "stderr": done.stderr[-_TAIL:]}
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


def distributed_environment(environ: Dict[str, str]) -> Dict[str, str]:
    return {k: v for k, v in environ.items()
            if any(k == e or (e.endswith("_") and k.startswith(e)) for e in DISTRIBUTED_ENVIRONMENT)}


class Probes:
    """The worker's stages on a thread, through fadoctor's runner (crash-isolated, timed)."""

    def __init__(self, stages: Optional[List[str]], timeout: Optional[float]) -> None:
        _own_package()
        from fadoctor.probes import runner, worker

        self.stages = list(stages or worker.STAGES)
        self._outcomes: Dict[str, Any] = {}
        timeouts = {s: timeout for s in self.stages} if timeout else None
        self._thread = threading.Thread(target=self._run, args=(runner, timeouts), daemon=True)
        self._thread.start()

    def _run(self, runner: Any, timeouts: Any) -> None:
        self._outcomes = runner.run_stages(sys.executable, self.stages, timeouts=timeouts,
                                           env=dict(os.environ))

    def wait(self) -> Dict[str, Any]:
        """Each stage's outcome as plain data; stages cut short by SIGTERM are failures."""
        while self._thread.is_alive() and not STOP.is_set():
            self._thread.join(0.2)
        out = {}
        for stage in self.stages:
            o = self._outcomes.get(stage)
            if o is None:
                out[stage] = {"ok": False, "seconds": 0.0, "failure": {
                    "kind": "error", "reason": "not finished: the launcher stopped this rank"}}
                continue
            failure = None
            if o.failure is not None:
                failure = {k: v for k, v in vars(o.failure).items() if v is not None}
            out[stage] = {"ok": o.ok, "data": o.data, "failure": failure, "seconds": o.seconds}
        return out


class Collective:
    """The collective smoke test (collective.py) in a child, killed at its deadline."""

    def __init__(self, spec: Dict[str, Any], limit: float) -> None:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "collective.py")
        child = dict(spec, timeout=max(limit - 15.0, limit * 0.5))
        read_fd, write_fd = os.pipe()
        self.started = time.monotonic()
        self.limit = limit
        self.proc = subprocess.Popen(
            [sys.executable, "-B", script, "--fd", str(write_fd), "--spec", json.dumps(child)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            pass_fds=(write_fd,), start_new_session=True)
        os.close(write_fd)
        self.events: List[Dict[str, Any]] = []
        self.tail: Deque[bytes] = deque(maxlen=64)
        self._readers = [
            threading.Thread(target=self._events, args=(os.fdopen(read_fd, "rb"),), daemon=True),
            threading.Thread(target=self._output, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _events(self, pipe: Any) -> None:
        with pipe:
            for line in pipe:
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    continue

    def _output(self) -> None:
        assert self.proc.stdout is not None
        for chunk in iter(lambda: self.proc.stdout.read1(4096), b""):  # type: ignore
            self.tail.append(chunk)

    def wait(self) -> Optional[str]:
        """Wait for the child; kill it at its deadline or on SIGTERM. Why it was killed, if so."""
        why = None
        while self.proc.poll() is None:
            if STOP.is_set():
                why = "the launcher stopped this rank"
            elif time.monotonic() - self.started > self.limit:
                why = "timeout"
            if why is not None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    self.proc.kill()
                self.proc.wait()
                break
            time.sleep(0.1)
        for reader in self._readers:
            reader.join(5)
        return why

    def record(self, channel: Any, world_size: int) -> Dict[str, Any]:
        killed = self.wait()
        ev = self.events
        phases = [e["phase"] for e in ev if e.get("event") == "phase"]
        out = {"device": next((e["data"] for e in ev if e.get("event") == "device"), None),
               "ops": [e["data"] for e in ev if e.get("event") == "op"],
               "skipped": [{"backend": e["backend"], "reason": e["reason"]}
                           for e in ev if e.get("event") == "skip"],
               "phase": phases[-1] if phases else "start",
               "seconds": round(time.monotonic() - self.started, 3),
               "failure": None}  # type: Dict[str, Any]
        if any(e.get("event") == "done" for e in ev):
            return out
        error = next((e for e in ev if e.get("event") == "error"), None)
        out["failure"] = _collective_failure(error, killed, self.proc.returncode, self.limit,
                                             b"".join(self.tail)[-_TAIL:])
        if channel is not None and out["phase"] not in ("start", "import", "connect"):
            with contextlib.suppress(Exception):  # the store is gone: nobody to ask
                out["failure"]["never_arrived"] = channel.absent("coll/at/" + out["phase"],
                                                                 list(range(world_size)))
        return out


def _collective_failure(error: Optional[Dict[str, Any]], killed: Optional[str], status: int,
                        limit: float, tail: bytes) -> Dict[str, Any]:
    text = tail.decode("utf-8", "replace").strip() or None
    if error is not None:
        return {"kind": "error", "reason": error["error"], "traceback_tail": error["traceback_tail"],
                "stderr_tail": text}
    if killed == "timeout":
        return {"kind": "timeout", "reason": "did not finish within %g s; killed" % limit,
                "stderr_tail": text}
    if killed is not None:
        return {"kind": "error", "reason": killed, "stderr_tail": text}
    if status is not None and status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "signal %d" % -status
        return {"kind": "crash", "reason": "died from %s" % name, "signal": name,
                "stderr_tail": text}
    return {"kind": "exit", "reason": "exited with status %s without reporting" % status,
            "stderr_tail": text}


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
    parser.add_argument("--wait", type=float, default=120.0, help="seconds from its start rank 0 "
                        "waits for a rank that never announces itself (default 120)")
    parser.add_argument("--stale", type=float, default=20.0, help="seconds of silence after "
                        "which an announced rank counts as lost (default 20)")
    parser.add_argument("--deadline", type=float, default=900.0,
                        help="seconds from its start rank 0 waits for every record (default 900)")
    parser.add_argument("--run-id", help="key prefix in the store (default: the launcher's job id)")
    return parser.parse_args(argv)


def _write(path: str, data: Dict[str, Any]) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    temporary = "%s.%d.tmp" % (path, os.getpid())
    with open(temporary, "w") as fh:
        json.dump(data, fh, indent=1, default=str)
    os.replace(temporary, path)


def _connect(spec: Dict[str, Any], timeout: float) -> Any:
    _own_package()
    from fadoctor.probes import gather

    try:
        return gather.Channel.connect(spec, timeout), None
    except Exception as exc:  # unreachable master, port taken, torch missing or broken
        return None, ("%s: %s" % (type(exc).__name__, exc))[:_TAIL]


def probe_rank(args: argparse.Namespace, spec: Dict[str, Any]) -> Any:
    """This rank's record (and the store channel), everything run in parallel."""
    started = time.monotonic()
    probes = Probes(args.stages.split(",") if args.stages else None, args.timeout)
    collective = None if args.no_collectives else Collective(spec, args.collective_timeout)
    driver: Dict[str, Any] = {}
    reader = threading.Thread(target=lambda: driver.update(driver_raw()), daemon=True)
    reader.start()
    channel, store_error = _connect(spec, args.wait)
    public = {k: v for k, v in spec.items() if k != "prefix"}
    beat = None
    if channel is not None:
        from fadoctor.probes import gather

        channel.announce(public)
        beat = gather.Heartbeat(channel)
    stages = probes.wait()
    files = (stages.get("files") or {}).get("data") or {}
    record = {
        "format": RECORD_FORMAT, "identity": public, "python": sys.executable,
        "stages": stages,
        "collective": collective.record(channel, spec["world_size"]) if collective else None,
        "extensions": hash_files([e["path"] for e in files.get("extensions", [])]),
        "environment": distributed_environment(dict(os.environ)),
        "store_error": store_error,
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
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: STOP.set())
    spec = dict(place, prefix="fadoctor/%s/" % (args.run_id or run_id(dict(os.environ))))
    started = time.monotonic()
    record, channel, beat = probe_rank(args, spec)
    rank = place["rank"]
    _write(os.path.join(args.out, "rank-%05d.json" % rank), record)
    if rank != 0:
        if channel is not None:
            try:
                channel.deliver(record)
            except Exception as exc:
                sys.stderr.write("fadoctor rank %d: could not deliver: %s\n" % (rank, exc))
        return 0
    from fadoctor.probes import gather

    gathering = gather.Gathering(place["world_size"], record, started)
    limits = gather.Limits(args.wait, args.stale, args.deadline)
    interrupted = gather.gather(channel, gathering, limits, STOP.is_set)
    if beat is not None:
        beat.stop()
    result = dict(gathering.result(interrupted), format=GATHER_FORMAT,
                  world_size=place["world_size"], run_id=spec["prefix"])
    path = os.path.join(args.out, "gathered.json")
    _write(path, result)
    sys.stderr.write("fadoctor: %d of %d rank(s) gathered into %s; read them with: fadoctor "
                     "check --facts-dir %s\n" % (len(result["ranks"]), place["world_size"], path,
                                                 args.out))
    return 0


if __name__ == "__main__":
    # Our own folder must not shadow the user's imports: drop it from the path.
    _here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _here:
        del sys.path[0]
    _status = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_status)  # skip tearing torch down: everything is written
