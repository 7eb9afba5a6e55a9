"""A process asking for GPUs the machine, the container or the scheduler does not give it, in the
runtime's own words (pure):

- CUDA's "invalid device ordinal" (cudaErrorInvalidDevice, the CUDA Runtime API's error 101): a
  device index beyond the GPUs the process sees (more ranks than GPUs, a hard-coded cuda:N, a
  CUDA_VISIBLE_DEVICES list shorter than the ranks);
- Docker refusing `--gpus device=0,1` unquoted: "cannot set both Count and DeviceIDs on device
  request" (the CLI reads the comma as a CSV field separator; Docker's reference for `docker run
  --gpus` writes the list quoted: '"device=1,2"');
- Ray's autoscaler finding no node with a GPU resource: "No available node types can fulfill
  resource request {'CPU': 1.0, 'GPU': 1.0}" (Ray registers GPUs it detects at `ray start` /
  `ray.init`, or those given by --num-gpus / num_gpus)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

_ORDINAL = re.compile(r"invalid device ordinal", re.I)
_NPROC = re.compile(r"--nproc[_-]per[_-]node[= ](\d+)")
_DOCKER = re.compile(r"cannot set both Count and DeviceIDs on device request")
_RAY = re.compile(r"No available node types can fulfill resource request \{[^}\n]{0,200}'GPU'")


def invalid_ordinal(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ORDINAL, ("invalid device ordinal",))
    if hit is None:
        return []
    nproc = ctx.first(_NPROC, ("nproc",))
    ranks = f" (--nproc_per_node={nproc[1].group(1)} starts that many)" if nproc else ""
    return [Signal("invalid_ordinal", Category.GPU_ASSIGNMENT,
                   "a process selected a GPU index this machine does not have, as the process "
                   f"sees them: more ranks than GPUs{ranks}, a device number written in the "
                   "code or config, or CUDA_VISIBLE_DEVICES listing fewer GPUs than the ranks",
                   [ctx.quote(hit[0]), *([ctx.quote(nproc[0])] if nproc else [])], NAMED,
                   [Remedy(summary="Start one rank per GPU the machine has (`nvidia-smi -L` lists "
                           "them): --nproc_per_node (torchrun), --num_processes (accelerate) or "
                           "--num_gpus (deepspeed) set to that count, and select each rank's "
                           "device from LOCAL_RANK, not a fixed cuda:N; with CUDA_VISIBLE_DEVICES "
                           "set, indexes count from 0 within that list.",
                           commands=["nvidia-smi -L"])],
                   details={"source": "CUDA Runtime API: cudaErrorInvalidDevice (101), "
                                      "\"invalid device ordinal\""})]


def docker_gpu_list(ctx: Context) -> List[Signal]:
    hit = ctx.first(_DOCKER, ("count and deviceids",))
    if hit is None:
        return []
    return [Signal("docker_gpus", Category.GPU_ASSIGNMENT,
                   "Docker read `--gpus device=0,1` as two fields (the comma separates the "
                   "option's CSV fields), a count and a device list, which it refuses together",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Quote the device list so the comma stays inside it, as "
                           "Docker's reference for `docker run --gpus` writes it (Compose: "
                           "device_ids: ['0', '1']).",
                           code="docker run --gpus '\"device=0,1\"' IMAGE")],
                   details={"source": "Docker CLI reference, docker run --gpus"})]


def ray_without_gpu(ctx: Context) -> List[Signal]:
    hit = ctx.first(_RAY, ("no available node types can fulfill",))
    if hit is None:
        return []
    return [Signal("ray_gpus", Category.GPU_ASSIGNMENT,
                   "Ray has no node with a GPU resource to run a task that asks for one: it "
                   "registered none at start (`ray status` lists only CPU and memory)",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Start Ray with the GPUs registered: `ray start --head "
                           "--num-gpus=N` or `ray.init(num_gpus=N)` (and a CUDA build of torch "
                           "with the GPUs visible to that process: CUDA_VISIBLE_DEVICES), then "
                           "check `ray status` lists GPU.", commands=["ray status"])],
                   details={"source": "Ray's autoscaler (resource demand scheduler)"})]
