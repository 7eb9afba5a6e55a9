"""A Triton attention kernel asking for more shared memory per block than the GPU has (Triton's
`OutOfResources: out of resource: shared memory, Required: N, Hardware limit: M`): block sizes
tuned on an A100 or H100 do not fit a GPU with less, so the configuration, not the install, is
the cause (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

# triton/runtime/errors.py (OutOfResources): f"out of resource: {name}, Required: {required},
# Hardware limit: {limit}. Reducing block sizes or `num_stages` may help."
_SMEM = re.compile(r"out of resource: shared memory, Required: (\d+),?\s*,?\s*Hardware limit: (\d+)")
# The most shared memory one block may use, by compute capability (CUDA C++ Programming Guide,
# "Technical Specifications per Compute Capability": 64 KB on 7.5, 163 KB on 8.0, 99 KB on 8.6
# and 8.9, 227 KB on 9.0).
_PER_BLOCK_KB = {"7.5": 64, "8.0": 163, "8.6": 99, "8.9": 99, "9.0": 227}
_GPU_OF = {"8.0": "an A100 (sm_80)", "9.0": "an H100/H200 (sm_90)"}


def _fits(required: int) -> Optional[str]:
    """The smallest datacenter GPU whose per-block shared memory holds `required` bytes."""
    for cc in ("8.0", "9.0"):
        if required <= _PER_BLOCK_KB[cc] * 1024:
            return _GPU_OF[cc]
    return None


def shared_memory(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SMEM, ("out of resource: shared memory",))
    if hit is None:
        return []
    required, limit = int(hit[1].group(1)), int(hit[1].group(2))
    gpu = ctx.gpu[0] if ctx.gpu else "this GPU"
    cc = ctx.gpu_cc_exact
    arch = f" (sm_{cc.major}{cc.minor})" if cc is not None else ""
    fits = _fits(required)
    flex = ctx.text.containing(("flex_attention", "flex_attn", "flexattention"))
    remedies = [Remedy(summary="Give the kernel smaller blocks or fewer pipeline stages (Triton's "
                       "own hint): the package's block-size / num_stages settings"
                       + ("; for torch's flex_attention, kernel_options" if flex else "") + ".",
                       code=("flex_attention(q, k, v, block_mask=mask,\n"
                             "               kernel_options={\"BLOCK_M\": 64, \"BLOCK_N\": 64, "
                             "\"num_stages\": 1})") if flex else None),
                Remedy(summary=f"Or run it on a GPU with more shared memory per block than "
                       f"{gpu}{arch} has" + (f": {fits} holds {required} bytes" if fits else "")
                       + "."),
                r.sdpa("Or use PyTorch SDPA for this attention, which picks kernels that fit:")]
    below = cc is not None and cc < Version("8.0")
    return [Signal("triton_shared_memory", Category.GPU_UNSUPPORTED,
                   f"the Triton kernel's block configuration needs {required} bytes of shared "
                   f"memory per block; {gpu}{arch} has {limit}: it was tuned for a GPU with more "
                   f"(per block: {_PER_BLOCK_KB['8.0']} KB on an A100, "
                   f"{_PER_BLOCK_KB['9.0']} KB on an H100, 99 KB on RTX 30/40-series"
                   + (", 64 KB on Turing" if below else "") + ")",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   remedies, details={"source": "triton/runtime/errors.py (OutOfResources); "
                                                "CUDA C++ Programming Guide, technical "
                                                "specifications per compute capability"})]
