"""torch asked for a GPU index beyond the devices CUDA enumerated: "device >= 0 && device <
num_gpus INTERNAL ASSERT FAILED" (aten/src/ATen/cuda/CUDAContext.cpp, getDeviceProperties). The
count is CUDA's, fixed when the process first initialises CUDA, from the CUDA_VISIBLE_DEVICES it
had then (the CUDA Programming Guide's environment variables: the driver reads it at
initialisation), so the index runs past it when:
- the program sets or changes CUDA_VISIBLE_DEVICES after torch has counted the GPUs (os.environ
  in the script after `import torch` and a first CUDA call, or a launcher's value narrowed later);
- the GPUs are MIG instances: a CUDA process enumerates one MIG instance only (NVIDIA's MIG user
  guide, "CUDA Device Enumeration"), so a second rank's cuda:1 does not exist in it (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_ASSERT = re.compile(r"device >= 0 && device < num_gpus INTERNAL ASSERT FAILED")
_MIG = re.compile(r"\bMIG\b|-MIG-\d|\d+g\.\d+gb\b")
SOURCE = ("pytorch/pytorch aten/src/ATen/cuda/CUDAContext.cpp; NVIDIA MIG user guide (CUDA device "
          "enumeration); CUDA Programming Guide (CUDA_VISIBLE_DEVICES)")


def beyond_count(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ASSERT, ("num_gpus internal assert",))
    if hit is None:
        return []
    mig = ctx.first(_MIG, ("mig", "gb"))
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.quote(mig[0])] if mig else [])])
    if mig is not None:
        return [Signal("device_count", Category.GPU_ASSIGNMENT,
                       "torch asked for a GPU index that this process does not have: the GPUs are "
                       "MIG instances, and a CUDA process enumerates a single MIG instance",
                       quotes, NAMED,
                       [Remedy(summary="Give each process (each rank) one MIG instance: set "
                               "CUDA_VISIBLE_DEVICES to that instance's MIG-<uuid> (nvidia-smi -L "
                               "lists them) before it starts, and use cuda:0 in it; a job that "
                               "needs several GPUs in one process needs whole GPUs, not MIG "
                               "slices.", commands=["nvidia-smi -L"])],
                       details={"source": SOURCE})]
    return [Signal("device_count", Category.GPU_ASSIGNMENT,
                   "torch asked for a GPU index beyond the devices CUDA counted for this process: "
                   "CUDA_VISIBLE_DEVICES was set or changed after torch first used CUDA, or the "
                   "index names a GPU that is not visible",
                   quotes, NAMED,
                   [Remedy(summary="Set CUDA_VISIBLE_DEVICES before the process starts (in the "
                           "shell or the launcher), or in the script before `import torch`, and "
                           "index the visible GPUs from 0; check that the index or the number "
                           "of processes fits `python -c \"import torch; "
                           "print(torch.cuda.device_count())\"`.",
                           commands=['python -c "import torch; print(torch.cuda.device_count())"'])],
                   details={"source": SOURCE})]
