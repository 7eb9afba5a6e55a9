"""A package whose compiled operators were built without CUDA, asked to run them on the GPU
(pure). Each says it in its own words:
- torch's dispatcher, for an operator a library registers (torchvision::nms, torch_scatter::...):
  "Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. This could be because
  the operator doesn't exist for this backend" (c10/core/dispatch/OperatorEntry.cpp,
  reportError): the library's build has no CUDA kernel registered, a CPU wheel of it or one for
  another torch build beside this CUDA torch;
- DGL's runtime: "Device API cuda is not enabled. Please install the cuda version of dgl."
  (dmlc/dgl src/runtime/c_runtime_api.cc, DeviceAPIManager::GetAPI);
- mmcv's op registry: "ms_deform_attn_impl_forward: implementation for device cuda:0 not found."
  (open-mmlab/mmcv mmcv/ops/csrc/common/pytorch_device_registry.hpp): mmcv built without its CUDA
  ops (mmcv-lite, or a source build with no CUDA seen: FORCE_CUDA=1 makes setup.py build them
  where no GPU is visible, MMCV_WITH_OPS=1 builds the ops at all; mmcv's build docs)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.install.torch import torch_index
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env, url
from fadoctor.triage import ext_torch
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import dist_of
from fadoctor.triage.signal import NAMED, Signal, dedupe

_DISPATCH = re.compile(r"Could not run '(\w{2,40})::(\w{1,80})' with arguments from the "
                       r"'(CUDA|QuantizedCUDA|SparseCUDA)' backend")
# torch's own operator namespaces: an op of these without a CUDA kernel is torch's own gap
_TORCH_OWN = {"aten", "prims", "_c10d_functional", "c10d", "quantized", "_quantized", "prepacked",
              "quantized_decomposed", "mkldnn", "onednn", "_caffe2", "profiler", "_test", "inductor"}
# DGL's CPU build: its runtime, and an operator of it asked for a GPU tensor ("Operator
# FarthestPointSampler does not support cuda device", dmlc/dgl src/array/array.cc's
# ATEN_XPU_SWITCH_CUDA)
_DGL = re.compile(r"Device API cuda is not enabled|Operator \w{1,60} does not support cuda device")
_MMCV = re.compile(r"(\w{1,80})_impl(?:_\w{1,40})?: implementation for device cuda(?::\d+)? not "
                   r"found")


def dispatcher(ctx: Context) -> List[Signal]:
    hit = ctx.first(_DISPATCH, ("with arguments from the",))
    if hit is None or hit[1].group(1) in _TORCH_OWN:
        return []
    namespace, op = hit[1].group(1), hit[1].group(2)
    dist = dist_of(namespace)
    cuda = ctx.torch_cuda
    built = f"CUDA {cuda.major}.{cuda.minor} build" if cuda else "CUDA build"
    return [Signal("no_cuda_ops", Category.WRONG_WHEEL,
                   f"{dist}'s build has no CUDA kernel for {namespace}::{op}: a CPU build of "
                   f"{dist}, or one made for another torch, beside a CUDA torch",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED,
                   [Remedy(summary=f"Reinstall {dist} built for the installed torch's {built}, "
                           f"from the same index as torch (the {dist} release paired with that "
                           "torch release), so its CUDA kernels load with it; a `pip install` "
                           "of a requirements file can replace one of the pair with a CPU "
                           "build.", commands=[_reinstall(ctx, dist)])],
                   details={"source": "c10/core/dispatch/OperatorEntry.cpp (reportError)"})]


def _reinstall(ctx: Context, dist: str) -> str:
    """The pip command: torch's own pair (torchvision, torchaudio) pinned to the release paired
    with the stated torch, from the index of torch's CUDA build where the report states it."""
    torch, cuda = ctx.torch, ctx.torch_cuda_stated
    paired = ext_torch.releases_for(dist, torch)[-1:] if torch is not None and dist in (
        "torchvision", "torchaudio") else []
    pin = f"{dist}=={paired[0][0]}" if paired else dist
    index = ["--index-url", url(torch_index(f"cu{cuda.major}{cuda.minor}"))] \
        if paired and cuda is not None else []
    return command("pip", "install", "--force-reinstall", "--no-deps", pin, *index)


def dgl_cpu(ctx: Context) -> List[Signal]:
    hit = ctx.first(_DGL, ("device api cuda is not enabled", "does not support cuda device"))
    if hit is None or (not ctx.text.containing(("dgl",))):
        return []
    cuda = ctx.torch_cuda
    variant = f"cu{cuda.major}{cuda.minor}" if cuda else "cuXYZ"
    return [Signal("dgl_cpu", Category.WRONG_WHEEL,
                   "the installed DGL is its CPU build: it has no CUDA device API",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED,
                   [Remedy(summary=f"Install the CUDA version of dgl for torch's CUDA ({variant}): "
                           "DGL publishes its CUDA builds on its own wheel index, named "
                           "dgl-cuXYZ before 1.0 and dgl==X+cuXYZ from 1.0 (its install page "
                           "gives the command for each torch and CUDA).")],
                   details={"source": "dmlc/dgl src/runtime/c_runtime_api.cc"})]


def mmcv_cpu(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MMCV, ("implementation for device cuda",))
    if hit is None:
        return []
    return [Signal("mmcv_cpu", Category.BUILD_TOOLCHAIN,
                   f"mmcv was built without its CUDA ops ({hit[1].group(1)} has no CUDA "
                   "implementation): mmcv-lite, or a build that saw no CUDA",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED,
                   [Remedy(summary="Install mmcv with its CUDA ops: OpenMMLab's prebuilt wheel for "
                           "this torch and CUDA (`mim install mmcv` picks it), or build it from "
                           "source with the ops on and CUDA forced (where the build machine has "
                           "no GPU, as on a login node), with nvcc of torch's CUDA on PATH.",
                           commands=[command(env("MMCV_WITH_OPS", "1"), env("FORCE_CUDA", "1"),
                                             "pip", "install", "--no-build-isolation", "-v",
                                             "mmcv")])],
                   details={"source": "open-mmlab/mmcv mmcv/ops/csrc/common/"
                                      "pytorch_device_registry.hpp"})]
