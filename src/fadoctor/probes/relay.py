"""fadoctor's runner for a caller without fadoctor installed: the rank agent
(fadoctor.in_target.rank) runs this file by path in the target interpreter, and gets the stages'
outcomes as they would be in `check` — each stage timed, a crash or hang of the worker recorded
and the worker restarted past it.

    <python> -B .../probes/relay.py < {"stages": [...], "timeouts": {...}, "options": {...},
                                       "env": {...}, "kernels": null | "default" | "full"}
    -> stdout: {"stage": {"ok": ..., "data": ..., "failure": {...}, "seconds": ...}, ...}

Standard library only, Python 3.8: it loads `fadoctor.probes.runner` from this install without
putting the install's site-packages (pydantic, ...) on the target's path.
"""

import json
import os
import sys
import types
from dataclasses import asdict
from typing import Any, Dict


def _runner() -> Any:
    here = os.path.dirname(os.path.abspath(__file__))  # .../fadoctor/probes
    root = os.path.dirname(here)
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]  # our own folder must shadow nothing
    for name, path in (("fadoctor", root), ("fadoctor.probes", here)):
        if name not in sys.modules:  # fadoctor's own folders, whatever the target has installed
            module = types.ModuleType(name)
            module.__path__ = [path]
            sys.modules[name] = module
    from fadoctor.probes import runner

    return runner


def relay(request: Dict[str, Any]) -> Dict[str, Any]:
    runner = _runner()
    timeouts = request.get("timeouts") or None
    if request.get("kernels"):  # the attention smoke tests, in their lanes, as `check` runs them
        from fadoctor.probes.kernels import KernelOptions, KernelWorkers

        outcomes = KernelWorkers(sys.executable, request["env"],
                                 KernelOptions(smoke=request["kernels"]),
                                 timeouts=timeouts).wait()
    else:
        outcomes = runner.run_stages(sys.executable, request["stages"], timeouts=timeouts,
                                     env=request.get("env"), options=request.get("options"))
    return {stage: {"ok": o.ok, "data": o.data, "seconds": o.seconds,
                    "failure": {k: v for k, v in asdict(o.failure).items() if v is not None}
                    if o.failure is not None else None}
            for stage, o in outcomes.items()}


def _die_with(parent: Any) -> None:
    """Linux: be killed when the rank agent that started us ends, even by SIGKILL; one that
    ended before this took hold shows as another parent."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:
        pass
    if parent is not None and os.getppid() != parent:
        os._exit(1)


if __name__ == "__main__":
    request = json.loads(sys.stdin.read())
    _die_with(request.get("parent"))
    answer = relay(request)
    sys.stdout.write(json.dumps(answer, default=str))
    sys.stdout.flush()
    os._exit(0)
