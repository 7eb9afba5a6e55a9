"""torch's expandable-segments allocator on a GPU whose driver lacks virtual memory management:
"RuntimeError: CUDA driver error: operation not supported". The "CUDA driver error:" wording is
C10_CUDA_DRIVER_CHECK's (c10/cuda/driver_api.h), and the allocator's expandable segments
(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; c10/cuda/CUDACachingAllocator.cpp) are its
caller at allocation time: cuMemCreate / cuMemMap, which an NVIDIA vGPU profile (an "L40S-48C",
"A100-40C") does not offer unless the host enables it. Libraries set the option themselves at
import (Unsloth sets expandable_segments:True, unslothai/unsloth#1446), so the fix is turning it
off after that import, or a passthrough GPU (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import IMPLIED, NAMED, Signal, dedupe

SOURCE = ("pytorch/pytorch c10/cuda/driver_api.h (C10_CUDA_DRIVER_CHECK) and "
          "CUDACachingAllocator.cpp (expandable segments); unslothai/unsloth#1446")
_REFUSED = re.compile(r"CUDA driver error: operation not supported")
# an NVIDIA vGPU profile name: the GPU, its framebuffer in GB and the profile's series letter
_VGPU = re.compile(r"\b(?:[A-Z]{1,2}\d{1,3}[A-Z]?|RTX ?\d{4}|RTX ?[A-Z]\d{4})-\d{1,3}[CQAB]\b")
_SETS_IT = ("unsloth", "expandable_segments", "pytorch_cuda_alloc_conf")


def unsupported(ctx: Context) -> List[Signal]:
    hit = ctx.first(_REFUSED, ("cuda driver error: operation not supported",))
    if hit is None:
        return []
    vgpu = ctx.first(_VGPU, ("-",))
    setter = ctx.text.containing(_SETS_IT)
    if vgpu is None and not setter:
        return []
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.quote(vgpu[0])] if vgpu else []),
                     *([ctx.quote(setter[0])] if setter else [])])
    where = f"the vGPU {vgpu[1].group(0)}" if vgpu else "this GPU's driver"
    return [Signal("expandable_segments", Category.PLATFORM_UNSUPPORTED,
                   "torch's expandable-segments allocator (PYTORCH_CUDA_ALLOC_CONF="
                   "expandable_segments:True, which some libraries set on import) needs the CUDA "
                   f"driver's virtual memory management, which {where} does not offer",
                   quotes, NAMED if vgpu else IMPLIED,
                   [Remedy(summary="Turn expandable segments off before the first CUDA "
                           "allocation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False in the "
                           "environment, and where a library sets it on import (Unsloth), turn "
                           "it off again after that import (torch applies allocator settings at "
                           "run time), or remove the library's line that sets it.",
                           code='import unsloth  # or the library that sets it\nimport torch\n'
                                'torch.cuda.memory._set_allocator_settings('
                                '"expandable_segments:False")'),
                    Remedy(summary="Or run on a GPU passed through whole (not a vGPU profile), or "
                           "ask the host to enable unified memory for the vGPU.")],
                   details={"source": SOURCE})]
