"""A dtype the kernel's dispatch macro has no case for: "<function> failed to dispatch data type
Float". FlashInfer's, sgl-kernel's and SageAttention's DISPATCH_PYTORCH_DTYPE_TO_CTYPE_FP16
switch has cases for at::ScalarType::Half and BFloat16 only and raises
`__PRETTY_FUNCTION__ << " failed to dispatch data type " << pytorch_dtype` for any other
(flashinfer-ai/flashinfer python/csrc/pytorch_extension_utils.h, sgl-project/sglang
sgl-kernel/include/utils.h, thu-ml/SageAttention csrc/dispatch_utils.h). Float means float32
tensors reached a half-precision kernel; BFloat16 on a GPU older than Ampere means a dtype the
GPU has no units for (bf16 needs compute capability 8.0) (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_FAILED = re.compile(r"failed to dispatch data type:?\s*(Float|Double|BFloat16|Half|Float8_\w+|"
                     r"\w+)")
_LIBRARIES = (("sageattention", "SageAttention"), ("sage_attention", "SageAttention"),
              ("sageattn", "SageAttention"), ("flashinfer", "FlashInfer"),
              ("sgl_kernel", "sgl-kernel"), ("sgl-kernel", "sgl-kernel"))
_AMPERE = Version("8.0")


def dispatch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FAILED, ("failed to dispatch data type",))
    if hit is None:
        return []
    dtype = hit[1].group(1)
    low = ctx.text.lower
    who = next((name for needle, name in _LIBRARIES if needle in low), "the kernel")
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    cc = ctx.gpu_cc_exact
    if dtype == "BFloat16" and cc is not None and cc < _AMPERE:
        return [Signal("dispatch_dtype", Category.DTYPE_UNSUPPORTED,
                       f"{who}'s kernel got bfloat16 tensors on {ctx.gpu[0] if ctx.gpu else 'a GPU'}"
                       f" (compute capability {cc}), which has no bfloat16 units", quotes, NAMED,
                       [Remedy(summary="Run the model in float16 on this GPU (bf16 needs "
                               "compute capability 8.0, Ampere): load it with torch_dtype="
                               "torch.float16, or the app's weight/compute dtype set to fp16."),
                        r.sdpa("Or attention with PyTorch SDPA:")])]
    if dtype in ("Float", "Double"):
        bits = "float32" if dtype == "Float" else "float64"
        return [Signal("dispatch_dtype", Category.DTYPE_UNSUPPORTED,
                       f"{who}'s kernel takes float16 and bfloat16 only, and got {bits} "
                       "tensors", quotes, NAMED,
                       [Remedy(summary=f"Cast the inputs to float16 or bfloat16 before the "
                               f"call (q.to(torch.float16), or run the model in half "
                               f"precision); {who} has no {bits} kernel. Where the model must "
                               "stay in float32, use PyTorch SDPA for these layers."),
                        r.sdpa("Or:")])]
    return [Signal("dispatch_dtype", Category.DTYPE_UNSUPPORTED,
                   f"{who}'s kernel has no case for {dtype} tensors: its dispatch takes "
                   "float16 and bfloat16", quotes, NAMED,
                   [Remedy(summary=f"Pass float16 or bfloat16 tensors to {who} (cast them, or "
                           "load the model in that dtype)."), r.sdpa("Or:")])]


# torch's own dispatch macros (ATen/Dispatch.h, AT_DISPATCH_SWITCH's default case: `"<name>" not
# implemented for '<ScalarType>'`): the kernel named has no case for that dtype on that device.
# Half and BFloat16 are what CPU kernels lacked longest (addmm_impl_cpu_, baddbmm__mkl,
# LayerNormKernelImpl ...): a half-precision model run on the CPU, or bf16 on a GPU before Ampere.
_NOT_IMPLEMENTED = re.compile(r"\"(\w{1,80})\" not implemented for '(Half|BFloat16|ComplexHalf)'")
_CPU_SAID = re.compile(r"\b(?:on|only|the|a|my|using|with|without) (?:the )?CPU\b|"
                       r"\bwithout (?:cuda|a gpu|gpu)\b|\bno (?:gpu|cuda)\b|\+cpu\b|"
                       r"device\s*=\s*['\"]cpu['\"]|not compiled with CUDA", re.I)


def not_implemented(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NOT_IMPLEMENTED, ("not implemented for",))
    if hit is None:
        return []
    kernel, dtype = hit[1].group(1), hit[1].group(2)
    said = ctx.first(_CPU_SAID, ("cpu", "cuda", "gpu"))
    on_cpu = "cpu" in kernel.lower() or "mkl" in kernel.lower() or said is not None
    word = {"Half": "float16", "BFloat16": "bfloat16", "ComplexHalf": "complex32"}[dtype]
    if on_cpu:
        where = "on the CPU, where torch's kernels for half precision are few"
        fix = Remedy(summary="Run on the CPU in float32: load the model with "
                     "torch_dtype=torch.float32 (or call model.float()) and drop any .half() or "
                     "fp16 conversion on that path; or run on a GPU with a CUDA build of torch.")
    else:
        where = "on this device"
        fix = Remedy(summary=("Load the model in float16 (torch_dtype=torch.float16), which GPUs "
                              "before Ampere run, or in float32." if dtype == "BFloat16" else
                              "Run that step in float32 (model.float(), torch_dtype="
                              "torch.float32)."))
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.quote(said[0])] if said is not None else [])])
    return [Signal("dtype_not_implemented", Category.DTYPE_UNSUPPORTED,
                   f"torch's {kernel} kernel has no {word} case {where}: the tensors reaching it "
                   f"are {word}", quotes, NAMED, [fix])]


# An extension's kernel that takes one dtype and got another (torch's TensorBase::data_ptr<T> /
# TORCH_CHECK on scalar_type: "expected scalar type Float but found Half"): a float32-only kernel
# reached under fp16 (autocast, .half(), a half-precision pipeline), or the reverse.
_SCALAR = re.compile(r"expected scalar type (Float|Half|BFloat16|Double) but found "
                     r"(Float|Half|BFloat16|Double)")
_NAMES = {"Float": "float32", "Half": "float16", "BFloat16": "bfloat16", "Double": "float64"}


def scalar_type(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SCALAR, ("expected scalar type",))
    if hit is None:
        return []
    wants, got = (_NAMES[hit[1].group(i)] for i in (1, 2))
    if wants == "float32":
        fix = Remedy(summary="That kernel takes float32 only: cast its inputs with .float() and "
                     "its output back, or run that op outside autocast (with "
                     "torch.autocast('cuda', enabled=False):), or train in float32; a newer "
                     "release of the package may accept half precision.")
    else:
        fix = Remedy(summary=f"That kernel takes {wants}, and {got} tensors reached it: keep "
                     f"the model and its inputs in one dtype ({wants} throughout, or float32 "
                     "throughout where the package has a full-precision mode, e.g. "
                     "--precision full --no-half).")
    return [Signal("scalar_type", Category.DTYPE_UNSUPPORTED,
                   f"a kernel written for {wants} got {got} tensors: its dtype check refused them",
                   [ctx.quote(hit[0])], NAMED, [fix])]
