"""TensorRT refusing the GPU: "Target GPU SM 70 is not supported by this TensorRT release." Each
release drops old architectures; no rebuild of the program around it brings one back, only a
TensorRT release that still has it (and whatever is built on that release, TensorRT-LLM
included) or a newer GPU (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_REFUSED = re.compile(r"Target GPU SM (\d{2,3}) is not supported by this TensorRT release")
# The last TensorRT release for each architecture, from NVIDIA's TensorRT release notes: 8.5.2
# ("TensorRT 8.5 will be the last release supporting NVIDIA Kepler (SM 3.x) devices. Support for
# Maxwell (SM 5.x) devices will be dropped in TensorRT 9.0"), 10.5.0 ("NVIDIA Volta support (GPUs
# with compute capability 7.0) has been removed starting with TensorRT 10.5").
_LAST = {"3": ("Kepler", "8.5"), "5": ("Maxwell", "8.6"), "70": ("Volta", "10.4")}
SOURCE = "NVIDIA TensorRT release notes 8.5.2 (Announcements) and 10.5.0 (Announcements)"


def refused(ctx: Context) -> List[Signal]:
    hit = ctx.first(_REFUSED, ("is not supported by this tensorrt release",))
    if hit is None:
        return []
    sm = hit[1].group(1)
    family, last = _LAST.get(sm, _LAST.get(sm[0], (None, None)))
    name = f"{family} (SM {sm})" if family else f"SM {sm}"
    said = f"this TensorRT release has dropped {name} GPUs"
    fixes = [Remedy(summary=f"Use TensorRT {last} or older for this GPU (the last release with "
                    f"{family}), with the releases built on it (a TensorRT-LLM release whose "
                    f"TensorRT is at most {last}); rebuilding the program for SM {sm} does not "
                    "help, the TensorRT library itself refuses it.")] if last else [
        Remedy(summary=f"Use an older TensorRT release whose support matrix lists SM {sm}; "
               "rebuilding the program does not help, the TensorRT library itself refuses it.")]
    fixes.append(Remedy(summary="Or run it on a newer GPU that this release supports (its support "
                        "matrix lists the compute capabilities it runs)."))
    return [Signal("tensorrt_arch", Category.GPU_UNSUPPORTED, said,
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED, fixes,
                   details={"source": SOURCE})]


# TensorRT 10's Python API without 8.x's workspace size: IBuilderConfig.max_workspace_size is gone
# (its replacement, IBuilderConfig.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, n), came in
# 8.4.0: the API changes for TensorRT 8.4.0 EA; the 8.x-to-10.x migration guide replaces trtexec's
# --workspace with --memPoolSize=workspace:<size> likewise). Code written for 8.x fails on 10 with
# an AttributeError on it (NVIDIA/TensorRT#3923, the maintainer's answer).
_REMOVED = re.compile(r"'(?:tensorrt_bindings\.)?tensorrt\.(?:tensorrt\.)?IBuilderConfig' object has "
                      r"no attribute 'max_workspace_size'")


def removed_api(ctx: Context) -> List[Signal]:
    hit = ctx.first(_REMOVED, ("max_workspace_size",))
    if hit is None:
        return []
    return [Signal("tensorrt_removed_api", Category.VERSION_CONFLICT,
                   "the program sets IBuilderConfig.max_workspace_size, which TensorRT 10 removed "
                   "(set_memory_pool_limit replaces it from 8.4): the code was written for TensorRT 8.x",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Change the program's line to config.set_memory_pool_limit("
                           "trt.MemoryPoolType.WORKSPACE, size) (TensorRT 8.4 and later), or "
                           "install a TensorRT 8.x release that the program was written for.",
                           commands=[command("pip", "install", "tensorrt<10")],
                           code="config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 1 << 30)")],
                   details={"source": "NVIDIA TensorRT API changes 8.4.0 EA; TensorRT 8.x-to-10.x "
                                      "migration guide (Removed Python APIs)"})]
