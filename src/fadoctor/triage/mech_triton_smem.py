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
from fadoctor.triage.text import Quote

# triton/runtime/errors.py (OutOfResources): f"out of resource: {name}, Required: {required},
# Hardware limit: {limit}. Reducing block sizes or `num_stages` may help."
# Inductor's autotuning logs the kernel's name in place of the resource, and the numbers may stand
# on the next line ("out of resource: triton_tem_fused_flex_attention_0" / "Required: 139776
# Hardware limit: 101376").
_SMEM = re.compile(r"Required: (\d+),?\s*,?\s*Hardware limit(?:ation)?:\s*(\d+)")
_RESOURCE = re.compile(r"out of resource: (?:shared memory|triton_\w{1,80})")
# The most shared memory one block may use (opt-in), by compute capability: the SM's shared memory
# less the 1 KB reserved per block from 8.0 on (NVIDIA/cccl@571f2fc3:libcudacxx/include/cuda/
# __device/arch_traits.h, max_shared_memory_per_block_optin; the CUDA C++ Programming Guide's
# technical specifications agree): 96 KB on 7.0, 64 KB on 7.5, 163 KB on 8.0 and 8.7, 99 KB on
# 8.6, 8.9 and 12.x, 227 KB on 9.0 and 10.x.
_PER_BLOCK_KB = {"7.0": 96, "7.5": 64, "8.0": 163, "8.6": 99, "8.7": 163, "8.9": 99, "9.0": 227,
                 "10.0": 227, "10.3": 227, "12.0": 99, "12.1": 99}
_GPU_OF = {"8.0": "an A100 (sm_80)", "9.0": "an H100/H200 (sm_90)"}


def _archs_with(limit: int) -> str:
    """The compute capabilities whose per-block limit is `limit` bytes (Triton prints it)."""
    return "/".join(f"sm_{cc.replace('.', '')}" for cc, kb in _PER_BLOCK_KB.items()
                    if kb * 1024 == limit)


def _fits(required: int) -> Optional[str]:
    """The smallest datacenter GPU whose per-block shared memory holds `required` bytes."""
    for cc in ("8.0", "9.0"):
        if required <= _PER_BLOCK_KB[cc] * 1024:
            return _GPU_OF[cc]
    return None


def shared_memory(ctx: Context) -> List[Signal]:
    hit = next(((i, m) for i, m in ctx.find(_SMEM, ("hardware limit",))
                if any(_RESOURCE.search(line) for _, line in ctx.text.window(i, 1, 0))), None)
    if hit is None:
        return []
    required, limit = int(hit[1].group(1)), int(hit[1].group(2))
    gpu = ctx.gpu[0] if ctx.gpu else "this GPU"
    cc = ctx.gpu_cc_exact
    arch = f" (sm_{cc.major}{cc.minor})" if cc is not None else ""
    archs = _archs_with(limit)
    own = _PER_BLOCK_KB.get(f"{cc.major}.{cc.minor}") if cc is not None else None
    if (archs and own is None) or (own is not None and own * 1024 != limit):
        # the limit Triton printed is the GPU's own: a GPU the report names with another limit
        # is not the one that ran it (a "works on H100" beside it)
        gpu, cc = "this GPU", None
        arch = f" ({archs}, by the limit Triton printed)" if archs else ""
        gpu_quote: List[Quote] = []
    else:
        gpu_quote = [ctx.gpu[2]] if ctx.gpu else []
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
                   f"{_PER_BLOCK_KB['9.0']} KB on an H100, 99 KB on RTX 30/40/50-series"
                   + (", 64 KB on Turing" if below else "") + ")",
                   dedupe([ctx.quote(hit[0]), *gpu_quote]), NAMED,
                   remedies, details={"source": "triton/runtime/errors.py (OutOfResources); "
                                                "CUDA C++ Programming Guide, technical "
                                                "specifications per compute capability"})]


# Inductor's autotuner when every candidate config of a template failed to compile or run
# (torch/_inductor/select_algorithm.py, NoValidChoicesError("No choices to select, please consider
# adding ATEN into max_autotune_gemm_backends config ..."); torch 2.13: "No choices to select.
# Provided reason: ..."): for flex_attention's templates, which
# have no ATen fallback, the default configs not fitting the GPU's shared memory or registers.
_NO_CHOICES = re.compile(r"NoValidChoicesError: No choices to select")


def no_valid_choices(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_CHOICES, ("no choices to select",))
    if hit is None or not ctx.text.containing(("flex_attention", "flex_attn", "flexattention")):
        return []
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    return [Signal("flex_no_choices", Category.KERNEL_FAILURE,
                   "Inductor found no flex_attention kernel configuration that compiles and runs "
                   f"on {ctx.gpu[0] if ctx.gpu else 'this GPU'}: its templates have no ATen "
                   "fallback, and the default block sizes ask for more shared memory than the GPU "
                   "gives a block (most often in the backward)", quotes, NAMED,
                   [Remedy(summary="Give flex_attention smaller blocks and fewer stages through "
                           "kernel_options, or compile it with mode=\"max-autotune\", which tries "
                           "more configurations.",
                           code=("flex_attention(q, k, v, block_mask=mask,\n"
                                 "               kernel_options={\"BLOCK_M\": 32, \"BLOCK_N\": 32, "
                                 "\"num_stages\": 1})\n"
                                 "flex = torch.compile(flex_attention, mode=\"max-autotune\")")),
                    r.sdpa("Or use PyTorch SDPA for this attention where the mask allows:")],
                   details={"source": "torch/_inductor/select_algorithm.py (NoValidChoicesError)"})]
