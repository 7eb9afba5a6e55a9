"""What a kernel does with the inputs it was given, not the environment (pure):
- a fault inside a library's kernel ("an illegal memory access was encountered", "misaligned
  address") with no environment cause read: a bug of that kernel for these inputs, or inputs
  outside what it indexes;
- flash-attention's causal mask with more queries than keys: from 2.1 it is aligned to the
  bottom right corner of the attention matrix, and a query row whose mask is all zero outputs
  zero (flash_attn_func's docstring in flash_attn/flash_attn_interface.py): by design;
- float32 asked of flash-attention, which implements fp16 and bf16 only (its README's
  "Datatype fp16 and bf16"; flash_api.cpp: "FlashAttention only support fp16 and bf16 data
  type")."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy, Severity
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.signal import HINTED, LOGGED, NAMED, Signal, dedupe

_FAULT = re.compile(r"an illegal memory access was encountered|misaligned address|"
                    r"illegal instruction was encountered|unspecified launch failure")


def illegal_access(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FAULT, ("illegal memory access", "misaligned address", "illegal instruction",
                             "unspecified launch failure"))
    if hit is None:
        return []
    library = frame_package(ctx, hit[0], ("torch",), after=4)
    who = library or "the failing kernel's library"
    return [Signal("kernel_fault", Category.KERNEL_FAILURE,
                   f"a kernel of {who} read or wrote outside its memory: a bug of that kernel for "
                   "these inputs (a mask, index or length it does not bound-check), or inputs "
                   "outside what it supports; nothing in the report points at the environment",
                   [ctx.quote(hit[0])], HINTED - 5,  # any environment cause read ranks above
                   [Remedy(summary=f"Upgrade {who}: out-of-bounds bugs for unusual inputs are "
                           "fixed release by release (its changelog names them).",
                           commands=[f"pip install --upgrade {library}"] if library else []),
                    Remedy(summary="Find the kernel: rerun with CUDA_LAUNCH_BLOCKING=1 (the error "
                           "then points at the launch that failed), and check that the masks, "
                           "indices and sequence lengths it gets lie within its tensors.",
                           commands=["export CUDA_LAUNCH_BLOCKING=1"])])]


_MORE_QUERIES = re.compile(r"seq(?:len)?_?q\w*\s*(?:>|is (?:longer|larger|greater) than)\s*seq(?:len)?"
                           r"_?k|seqlen_q\s*-\s*seqlen_k|more queries than keys", re.I)
_ZERO = re.compile(r"\b(?:is|are|be|remain\w*|become\w*|gets?)\s+(?:all\s+)?(?:0|zeros?)\b|"
                   r"\bzero(?:s|ed)?\b", re.I)
CAUSAL_SOURCE = ("Dao-AILab/flash-attention flash_attn/flash_attn_interface.py (flash_attn_func: "
                 "\"If causal=True, the causal mask is aligned to the bottom right corner of the "
                 "attention matrix\", from 2.1)")


def causal_rows(ctx: Context) -> List[Signal]:
    more = ctx.first(_MORE_QUERIES, ("seq", "queries"))
    if more is None or not ctx.text.containing(("causal",)) or not ctx.text.containing(
            ("flash_attn", "flash-attn", "flashattention", "flash attention")):
        return []
    zero = ctx.first(_ZERO, ("0", "zero"))
    if zero is None:
        return []
    return [Signal("causal_alignment", Category.INFO,
                   "by design: with causal=True flash-attention (2.1 and later) aligns the causal "
                   "mask to the bottom right corner, so when seqlen_q > seqlen_k the first "
                   "seqlen_q - seqlen_k query rows attend to nothing and output zero",
                   dedupe([ctx.quote(more[0]), ctx.quote(zero[0])]), LOGGED,
                   [Remedy(summary="Nothing to fix, the zeros are by design: for a top-left aligned mask "
                           "(query i sees keys 0..i) pass an explicit mask through another "
                           "attention (SDPA with is_causal=False and your own tril mask), or "
                           "align the sequences so seqlen_q <= seqlen_k.")],
                   Severity.INFO, details={"source": CAUSAL_SOURCE})]


_FP32 = re.compile(r"\b(?:float32|fp32|torch\.float\b|single precision)", re.I)
_ASKS = re.compile(r"\?|\bsupported\b|\bsupport\b", re.I)


def fp32_question(ctx: Context) -> List[Signal]:
    """A report asking about float32 with flash-attention, no error message read."""
    if ctx.seen.raised or not ctx.text.containing(("flash", "fa2", "fa3")):
        return []
    hit = next(((i, m) for i, m in ctx.find(_FP32, ("float32", "fp32", "torch.float",
                                                     "single precision"))
                if _ASKS.search(ctx.text.lines[i])), None)
    if hit is None:
        return []
    return [Signal("fp32_question", Category.DTYPE_UNSUPPORTED,
                   "flash-attention computes in fp16 and bf16 only: float32 q, k and v are "
                   "refused (\"FlashAttention only support fp16 and bf16 data type\")",
                   [ctx.quote(hit[0])], HINTED,
                   [Remedy(summary="Cast q, k and v to bf16 (or fp16) for the attention call and "
                           "back after, or keep fp32 with PyTorch SDPA, which takes it.",
                           code="out = flash_attn_func(q.bfloat16(), k.bfloat16(), v.bfloat16())"
                                ".to(q.dtype)"),
                    r.sdpa("Or attention in fp32 with SDPA:")])]


# CUDA's cudaErrorInvalidConfiguration, "invalid configuration argument": a launch asking for
# what the device can never give (CUDA Runtime API, error types: too many threads or blocks, or
# more shared memory than a block may have). With attention kernels the usual one is a grid's y or
# z dimension over 65535 (cudaDeviceProp.maxGridSize): a batch, or batch x heads, above it.
_INVALID_CONFIG = re.compile(r"invalid configuration argument", re.I)


def invalid_configuration(ctx: Context) -> List[Signal]:
    hit = ctx.first(_INVALID_CONFIG, ("invalid configuration argument",))
    if hit is None:
        return []
    xformers = bool(ctx.text.containing(("xformers",)))
    fixes = [Remedy(summary="Keep every launch within CUDA's limits: a grid's y and z dimensions "
                    "stop at 65535, so split a batch (or batch x heads) above 65535 into chunks "
                    "and run them one after another.")]
    if xformers:
        fixes.insert(0, Remedy(summary="Turn xformers off for this run (the app's "
                               "--disable-xformers or its attention option), so PyTorch attention "
                               "(SDPA) runs; then upgrade xformers, whose kernel launched this."))
    fixes.append(Remedy(summary="Or run that attention with SDPA's math backend "
                        "(torch.nn.attention.sdpa_kernel(SDPBackend.MATH)), which launches plain "
                        "matmul and softmax kernels instead of one fused kernel per batch entry, "
                        "and upgrade PyTorch, whose fused kernels lift such limits release by "
                        "release."))
    return [Signal("invalid_configuration", Category.KERNEL_FAILURE,
                   "a CUDA kernel was launched with a configuration the GPU can never run (too "
                   "many blocks in one grid dimension, too many threads, or too much shared "
                   "memory per block)" + (", in xformers' attention" if xformers else ""),
                   [ctx.quote(hit[0])], NAMED, fixes,
                   details={"source": "CUDA Runtime API, cudaErrorInvalidConfiguration; "
                                      "cudaDeviceProp.maxGridSize"})]


# torch's asynchronous allocator (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, CUDA's stream-
# ordered memory pools), which ComfyUI turns on by default for torch 2.0+ (comfy cuda_malloc.py,
# off with --disable-cuda-malloc; Fooocus copied it): a GPU or driver without memory-pool support
# fails every allocation with "CUDA error: operation not supported". torch's own check asks a
# CUDA 11.4+ driver (c10/cuda/CUDAAllocatorConfig.cpp: "backend:cudaMallocAsync requires CUDA
# runtime 11.4 or newer").
_NOT_SUPPORTED = re.compile(r"CUDA error: operation not supported|"
                            r"backend:cudaMallocAsync requires CUDA (?:runtime|\w+ \w+ \w+ with) ")
_ASYNC = re.compile(r"cudaMallocAsync|cuda[-_ ]malloc", re.I)


def async_allocator(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NOT_SUPPORTED, ("operation not supported", "requires cuda"))
    told = ctx.first(_ASYNC, ("mallocasync", "malloc")) if hit is not None else None
    if hit is None or told is None:
        return []
    return [Signal("async_allocator", Category.KERNEL_FAILURE,
                   "torch's asynchronous CUDA allocator (backend:cudaMallocAsync) is on, and this "
                   "GPU or driver does not support CUDA's memory pools: every allocation fails",
                   dedupe([ctx.quote(hit[0]), ctx.quote(told[0])]), NAMED,
                   [Remedy(summary="Turn the asynchronous allocator off: start ComfyUI (or an app "
                           "built on its code, such as Fooocus) with --disable-cuda-malloc, and "
                           "remove backend:cudaMallocAsync from PYTORCH_CUDA_ALLOC_CONF where it "
                           "is set; torch's native allocator needs no memory-pool support. An "
                           "update of the app may have dropped the default already.")])]


# CUDA's cudaErrorLaunchOutOfResources, "too many resources requested for launch": the block's
# threads times the registers each thread uses exceed the SM's register file per block (CUDA
# Runtime API, error types: "too many threads for the kernel's register count"). A kernel written
# with 1024 threads per block (the CUDA_NUM_THREADS of many deformable-convolution ops) runs out on
# GPUs with 32K registers per block (Jetson TX1/TX2, Maxwell and older) or in a debug (-G) build.
_OUT_OF_RESOURCES = re.compile(r"too many resources requested for launch", re.I)


def out_of_resources(ctx: Context) -> List[Signal]:
    hit = ctx.first(_OUT_OF_RESOURCES, ("too many resources requested",))
    if hit is None:
        return []
    library = frame_package(ctx, hit[0], ("torch",), after=4)
    return [Signal("launch_out_of_resources", Category.KERNEL_FAILURE,
                   f"a kernel{f' of {library}' if library else ''} was launched with more "
                   "threads per block than this GPU has registers for (threads x registers per "
                   "thread over the register file a block may use)",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Lower the kernel's threads per block and rebuild the "
                           "extension: the op's CUDA_NUM_THREADS (or the block size of its "
                           "launch) from 1024 to 512 or 256, or cap its registers with nvcc "
                           "-maxrregcount=64; and build without -G (a debug build uses more "
                           "registers).")],
                   details={"source": "CUDA Runtime API, cudaErrorLaunchOutOfResources"})]
