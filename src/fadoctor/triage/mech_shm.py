"""DataLoader workers out of shared memory: torch passes each batch from a worker process through
/dev/shm, and a worker that cannot grow a shared-memory segment dies of SIGBUS. torch's own words:
"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared
memory (shm)." (torch/csrc/DataLoader.cpp's SIGBUS handler) and "DataLoader worker (pid N) is
killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory.
Please try to raise your shared memory limit." (torch/utils/data/_utils/signal_handling.py). A
container's /dev/shm is 64 MB unless it is given more (Docker's --shm-size, or --ipc=host; a
Kubernetes pod mounts an in-memory emptyDir there) (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import IMPLIED, NAMED, Signal

SOURCE = ("pytorch/pytorch torch/csrc/DataLoader.cpp (SIGBUS handler) and "
          "torch/utils/data/_utils/signal_handling.py; Docker's run reference (--shm-size, 64 MB "
          "by default)")
_SHM = re.compile(r"insufficient shared memory \(shm\)|workers are out of shared(?: memory|$)|"
                  r"DataLoader worker \(pids?[^)]{0,80}\) is killed by signal: Bus error|"
                  # a launcher's child killed by SIGBUS (signal 7): DeepSpeed's "exits with
                  # return code = -7", torchrun's "exitcode  : -7" / "Signal 7 (SIGBUS)"
                  r"exits with return code = -7\b|exitcode\s*: -7\b|Signal 7 \(SIGBUS\)|"
                  # NCCL's shared-memory transport between GPUs of one node (its shm.h:
                  # "Call to posix_fallocate failed: No space left on device", "Error while
                  # creating shared memory segment nccl-shm-...")
                  # (quoted without NCCL's prefix too: the segment is NCCL's by its name)
                  r"NCCL WARN (?:Call to posix_fallocate failed|Error while creating shared "
                  r"memory segment)|Error while creating shared memory segment (?:/dev/shm/)?nccl-")


def out_of_shm(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SHM, ("shared", "bus error", "-7", "sigbus", "posix_fallocate"))
    if hit is None:
        return []
    container = ctx.text.containing(("docker", "container", "kubernetes", "k8s", "pod"))
    where = "the container's /dev/shm (64 MB unless the container is given more)" if container \
        else "/dev/shm"
    signal_only = "-7" in hit[1].group(0) or "Signal 7" in hit[1].group(0)
    if "NCCL WARN" in hit[1].group(0) or "nccl-" in hit[1].group(0):
        return [Signal("nccl_shm", Category.COLLECTIVE_FAILED,
                       f"NCCL could not create the shared-memory segments its transport between "
                       f"this node's GPUs uses: {where} is full or too small",
                       [ctx.quote(hit[0])], NAMED,
                       [Remedy(summary="Give the container more shared memory (docker run "
                               "--shm-size=16g, or --ipc=host); meanwhile NCCL_SHM_DISABLE=1 "
                               "makes NCCL use another transport (slower).",
                               commands=["export NCCL_SHM_DISABLE=1"])],
                       details={"source": "NCCL's shm.h (posix_fallocate on /dev/shm)"})]
    message = (f"a process died of SIGBUS (signal 7) with no error of its own: most often "
               f"{where} filling up (DataLoader workers' batches, or NCCL's shared-memory "
               "transport between GPUs)" if signal_only else
               f"DataLoader's worker processes pass batches through shared memory, and {where} is "
               "too small for them: a worker died of a bus error (SIGBUS) growing a segment")
    return [Signal(
        "dataloader_shm", Category.OUT_OF_MEMORY, message,
        [ctx.quote(hit[0])], IMPLIED if signal_only else NAMED,
        [Remedy(summary="Give the container more shared memory: `docker run --shm-size=16g ...` "
                "(or --ipc=host, which shares the host's); in docker compose, `shm_size: 16gb`; in "
                "Kubernetes, mount an emptyDir with medium: Memory at /dev/shm."),
         Remedy(summary="Or, outside a container, check `df -h /dev/shm` and raise its size; or "
                "load in the main process meanwhile (DataLoader(..., num_workers=0)), slower but "
                "free of shared memory.")],
        details={"source": SOURCE})]
