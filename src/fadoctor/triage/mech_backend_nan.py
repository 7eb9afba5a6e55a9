"""NaN, Inf, black images or artifacts that the report ties to an attention backend other than
flash-attention: SageAttention's kernels, SDPA's cuDNN backend, xFormers (pure). The symptom and
the backend must be named together (one line, or within a few lines): a report that merely lists
xformers among its packages is not about xformers.

SageAttention: `sageattn` picks its kernel by the GPU's arch: sm80/sm86 an fp16 PV kernel, sm89,
sm90 and sm120 an fp8 PV one (sageattn_qk_int8_pv_fp8_cuda, ..._sm90), the least accurate
(thu-ml/SageAttention sageattention/core.py, `sageattn`, v2.1.1 and v2.2.0); its fixes land on
its main branch before a release. SDPA's cuDNN backend is switched off by
torch.backends.cuda.enable_cudnn_sdp(False) (torch/backends/cuda/__init__.py, 2.3 on)."""

from __future__ import annotations

import re
from typing import List, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.triage import ext_torch
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, NAMED, Signal, dedupe

_SYMPTOM = re.compile(r"\b(?:nan|NaN|NAN|inf)s?\b|\bblack (?:images?|outputs?|pictures?|frames?|"
                      r"videos?|screen)\b|\bartifacts?\b|\bgarbage (?:output|images?|text)\b|"
                      r"invalid value encountered in cast|\b(?:noisy|corrupted|distorted) "
                      r"(?:images?|outputs?|videos?)\b|\bwrong (?:output|result|gradient)s?\b")
_BACKENDS: Tuple[Tuple[str, re.Pattern[str], Tuple[str, ...]], ...] = (
    ("sageattention", re.compile(r"sageattn|sage[ _-]?attention|_sage_|--use-sage|disable-sage|"
                                 r"\bsage\b", re.I),
     ("sage",)),
    ("cudnn", re.compile(r"cudnn[ _-]?(?:sdpa|attention|attn|backend)|enable_cudnn_sdp|"
                         r"CUDNN_ATTENTION|_scaled_dot_product_cudnn_attention", re.I),
     ("cudnn",)),
    ("xformers", re.compile(r"xformers", re.I), ("xformers",)),
)
_NEAR = 3  # lines between the symptom and the backend's name


def backend_nan(ctx: Context) -> List[Signal]:
    """The backends' names are rarer than the symptoms' words ("inf" is in every "INFO"): the
    symptom is looked for only near a line that names a backend."""
    for name, pattern, needles in _BACKENDS:
        for named, _ in ctx.find(pattern, needles):
            for near in range(max(0, named - _NEAR), min(len(ctx.text.lines), named + _NEAR + 1)):
                line = ctx.text.lines[near]
                if _SYMPTOM.search(line) and "nan_to_num" not in ctx.low(near):
                    return [_signal(ctx, name, (near, named))]
    return []


def _signal(ctx: Context, backend: str, pair: Tuple[int, int]) -> Signal:
    quotes = dedupe([ctx.quote(pair[0]), ctx.quote(pair[1]), *ctx.quotes("torch", "gpu")])
    if backend == "sageattention":
        return Signal("backend_nan", Category.NUMERICS,
                      "the report ties NaN, black or corrupted output to SageAttention: its "
                      "quantized kernels (the fp8 PV ones `sageattn` picks on sm89, sm90 and "
                      "sm120 above all) are the suspect", quotes, HINTED, [
                          Remedy(summary="Call SageAttention's fp16 PV kernel instead of the fp8 "
                                 "one: sageattn_qk_int8_pv_fp16_cuda (or "
                                 "sageattn_qk_int8_pv_fp16_triton), slower and more accurate; in "
                                 "a UI, its fp16 kernel option.",
                                 code="from sageattention import sageattn_qk_int8_pv_fp16_cuda\n"
                                      "out = sageattn_qk_int8_pv_fp16_cuda(q, k, v, "
                                      "tensor_layout=\"HND\", is_causal=False, "
                                      "pv_accum_dtype=\"fp32\")"),
                          Remedy(summary="To confirm, disable SageAttention (Forge: "
                                 "--disable-sage; ComfyUI: drop --use-sage-attention; diffusers: "
                                 "the native backend): if the output is right, the kernel is at "
                                 "fault. SageAttention's fixes reach its main branch before a "
                                 "release: build it from source.",
                                 commands=["git clone https://github.com/thu-ml/SageAttention.git",
                                           "cd SageAttention",
                                           "pip install . --no-build-isolation"]),
                          r.sdpa("Or run that attention with PyTorch SDPA:")],
                      needs=[("the SageAttention kernel and the GPU", "pip show sageattention; "
                              "nvidia-smi --query-gpu=name,compute_cap --format=csv")])
    if backend == "cudnn":
        return Signal("backend_nan", Category.NUMERICS,
                      "the report ties NaN or wrong output to SDPA's cuDNN backend: a defect of "
                      "that backend (in the cuDNN this torch bundles) for these shapes or masks",
                      quotes, HINTED, [
                          Remedy(summary="Disable SDPA's cuDNN backend, so SDPA takes its "
                                 "flash or memory-efficient kernel (or pin those with "
                                 "torch.nn.attention.sdpa_kernel):",
                                 code="torch.backends.cuda.enable_cudnn_sdp(False)"),
                          Remedy(summary="Or attn_implementation=\"eager\" for that model, and "
                                 "upgrade torch (a newer cuDNN) when a release fixes it.")])
    torch = str(ctx.torch) if ctx.torch is not None else None
    upgrade = ext_torch.remedies("xformers", None, torch) if torch else [Remedy(
        summary="Upgrade xformers to the newest release built for your torch (its wheel "
                "metadata pins one torch; a bare `pip install -U xformers` replaces torch).")]
    return Signal("backend_nan", Category.NUMERICS,
                  "the report ties NaN, black or wrong output to xFormers: a defect of its "
                  "kernels in this release, on this GPU", quotes, HINTED, [
                      Remedy(summary="To confirm, disable xformers (the UI's option, or run "
                             "without --xformers): PyTorch SDPA instead. If that fixes it, the "
                             "xformers release is at fault."),
                      *upgrade, r.sdpa("Or use PyTorch SDPA:")])


# SDPA's cuDNN backend failing to run the fused-attention graph it built: pytorch's
# aten/src/ATen/native/cudnn/MHA.cpp checks TORCH_CHECK(mha_graph->execute(handle, variant_pack,
# workspace_ptr.get()).is_good()) (a TORCH_INTERNAL_ASSERT in the first releases), and cuDNN's
# frontend raises "cudnn_frontend ... failed" likewise: a defect of that backend for the shape.
_EXECUTE = re.compile(r"mha_graph\W{1,4}execute\b[^\n]{0,80}is_good\(\)|\bmha_graph\W{1,4}"
                      r"(?:build|check_support)\b[^\n]{0,60}is_good\(\)")


def cudnn_execute(ctx: Context) -> List[Signal]:
    hit = ctx.first(_EXECUTE, ("mha_graph",))
    if hit is None:
        return []
    return [Signal("cudnn_sdpa", Category.KERNEL_FAILURE,
                   "SDPA's cuDNN backend failed to run the fused-attention graph it built for "
                   "this call: a defect of that backend (the cuDNN this torch loads) for these "
                   "shapes, often intermittent", [ctx.quote(hit[0])], NAMED, [
                       Remedy(summary="Turn SDPA's cuDNN backend off, so SDPA takes its flash or "
                              "memory-efficient kernel (or pin them with "
                              "torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, "
                              "SDPBackend.EFFICIENT_ATTENTION])):",
                              code="torch.backends.cuda.enable_cudnn_sdp(False)"),
                       Remedy(summary="Then upgrade torch (with it the cuDNN it bundles) when a "
                              "release fixes the backend.")],
                   details={"source": "pytorch/pytorch aten/src/ATen/native/cudnn/MHA.cpp "
                                      "(run_cudnn_SDP_fprop/bprop: mha_graph->execute)"})]
