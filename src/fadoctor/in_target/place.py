"""A rank's place in its job, read from the launcher's environment variables (torchrun, srun, or
anything that sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)."""

import os
import socket
from typing import Any, Dict, List, Mapping

MAX_WORLD = 1 << 17  # ranks: above the largest jobs run, and a bound on the work per job
# (field, torchrun and env:// variable, srun variable)
_PLACE = (("rank", "RANK", "SLURM_PROCID"), ("world_size", "WORLD_SIZE", "SLURM_NTASKS"),
          ("local_rank", "LOCAL_RANK", "SLURM_LOCALID"), ("node_rank", "GROUP_RANK", "SLURM_NODEID"),
          ("local_world_size", "LOCAL_WORLD_SIZE", None))
SLURM_HINT = (": srun does not set it; export MASTER_ADDR=$(scontrol show hostnames "
              "\"$SLURM_JOB_NODELIST\" | head -n 1) MASTER_PORT=29500")


class LaunchError(Exception):
    """The environment is not a launcher's: one line for the user."""


def identity(environ: Dict[str, str]) -> Dict[str, Any]:
    """This rank's place in the job. torchrun's variables win over srun's (torchrun in srun)."""
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
    wrong = problems(out)
    if wrong:
        raise LaunchError(wrong[0])
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if not environ.get(name):
            raise LaunchError("%s is not set%s" % (name, SLURM_HINT if slurm else ""))
    port = environ["MASTER_PORT"]
    if not (port.isdigit() and port.isascii() and 1 <= int(port) <= 65535):
        raise LaunchError("MASTER_PORT=%r is not a port number (1 to 65535)" % port)
    out.update(host=socket.gethostname(), pid=os.getpid(),
               launcher="torchrun" if "TORCHELASTIC_RUN_ID" in environ else (
                   "slurm" if slurm else "env"),
               master_addr=environ["MASTER_ADDR"], master_port=int(environ["MASTER_PORT"]),
               agent_store=environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True")
    return out


def problems(place: Mapping[str, Any]) -> List[str]:
    """What cannot be true of a rank's place (read from a launcher or from a record): a world of
    no ranks or of more than MAX_WORLD (its ranks are listed: bounded work), a rank outside it, a
    negative local or node rank, a local rank outside its node, a port that is not one."""
    out = []
    rank, world = place.get("rank"), place.get("world_size")
    if world is not None and not 1 <= world <= MAX_WORLD:
        out.append("WORLD_SIZE %d: a job has 1 to %d ranks" % (world, MAX_WORLD))
    elif rank is not None and world is not None and not 0 <= rank < world:
        out.append("RANK %d is not below WORLD_SIZE %d" % (rank, world))
    local, local_world = place.get("local_rank"), place.get("local_world_size")
    if local_world is not None and world is not None and not 1 <= local_world <= world:
        out.append("LOCAL_WORLD_SIZE %d is not 1 to WORLD_SIZE %d" % (local_world, world))
    elif local is not None and local < 0:
        out.append("LOCAL_RANK %d is negative" % local)
    elif local is not None and local_world is not None and local >= local_world:
        out.append("LOCAL_RANK %d is outside its node's %d ranks" % (local, local_world))
    if place.get("node_rank") is not None and place["node_rank"] < 0:
        out.append("the node rank %d is negative" % place["node_rank"])
    port = place.get("master_port")
    if port is not None and not 1 <= port <= 65535:
        out.append("MASTER_PORT %d is not a port number (1 to 65535)" % port)
    return out


def run_id(environ: Dict[str, str]) -> str:
    """A name every rank of this job computes alike, for the store's key prefix."""
    if environ.get("TORCHELASTIC_RUN_ID"):
        return environ["TORCHELASTIC_RUN_ID"]
    if environ.get("SLURM_JOB_ID"):
        return "%s.%s" % (environ["SLURM_JOB_ID"], environ.get("SLURM_STEP_ID", "0"))
    return "job"


def matching(environ: Dict[str, str], names: Any) -> Dict[str, str]:
    """The variables of `environ` named in `names` (exact names, or prefixes ending in "_")."""
    return {k: v for k, v in environ.items()
            if any(k == n or (n.endswith("_") and k.startswith(n)) for n in names)}
