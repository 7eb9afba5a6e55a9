"""torch.distributed asked for NCCL in a torch built without it: "Distributed package doesn't have
NCCL built in" (torch/distributed/distributed_c10d.py, raised when the nccl backend is requested
and `is_nccl_available()` is false). PyTorch's Windows and macOS builds have no NCCL (its
distributed docs: on Windows only the Gloo backend), nor do its CPU-only builds (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows
from fadoctor.triage.signal import NAMED, Signal, dedupe

# (a traceback's source line splits it: "Distributed package doesn't have NCCL " "built in")
_NO_NCCL = re.compile(r"Distributed package doesn't have NCCL[ \"']{1,5}built in", re.I)
_CUDA_TORCH = Remedy(summary="Install a CUDA build of torch from the PyTorch index for the CUDA "
                     "your driver runs (`fadoctor fix` picks it).",
                     commands=["fadoctor fix --print-pins"])
_MAC = re.compile(r"\bmacos\b|\bdarwin\b|\bapple (?:silicon|m[1-4])\b|\bmps\b", re.I)


def no_nccl(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_NCCL, ("have nccl",))
    if hit is None:
        return []
    quotes = dedupe([ctx.quote(hit[0]), *ctx.quotes("torch", "os")])
    gloo = Remedy(summary="Use the Gloo backend, which every torch build has: "
                  "torch.distributed.init_process_group(backend=\"gloo\") (in a launcher, its "
                  "backend option, e.g. Accelerate's or torchrun's script argument; a single GPU "
                  "needs no process group at all).",
                  code='torch.distributed.init_process_group(backend="gloo")')
    cpu = str(ctx.seen.get(o.TORCH) or "").endswith("+cpu") or (ctx.torch_cuda is None and \
        ctx.has("+cpu", "cpu-only", "cpu only") is not None)
    if on_windows(ctx) or ctx.first(_MAC, ("macos", "darwin", "apple", "mps")) is not None:
        where = "Windows" if on_windows(ctx) else "macOS"
        return [Signal("no_nccl", Category.PLATFORM_UNSUPPORTED,
                       f"PyTorch's {where} builds have no NCCL, so the nccl backend cannot start: "
                       "only Gloo is built in there", quotes, NAMED,
                       [gloo, Remedy(summary="For NCCL (multi-GPU speed), run it on Linux: on "
                                     "Windows under WSL2 with a Linux CUDA build of torch.")])]
    if cpu:
        return [Signal("no_nccl", Category.TORCH_CPU_ONLY,
                       "this torch is a CPU-only build, which has no NCCL (and no CUDA)", quotes,
                       NAMED, [_CUDA_TORCH, gloo])]
    return [Signal("no_nccl", Category.PLATFORM_UNSUPPORTED,
                   "this torch build has no NCCL: PyTorch's Windows and macOS builds and its "
                   "CPU-only builds have none, so the nccl backend cannot start", quotes, NAMED,
                   [gloo, Remedy(summary="For NCCL, use a Linux CUDA build of torch (on "
                                 "Windows, under WSL2)."), _CUDA_TORCH],
                   needs=[("the OS and torch build", "python -m torch.utils.collect_env")])]


# torch's TCPStore on a build without libuv: "use_libuv was requested but PyTorch was built without
# libuv support" (torch/csrc/distributed/c10d/TCPStore.cpp; some releases print "was build
# without"). torch 2.4 made libuv the store's
# default backend, and its Windows builds have none; USE_LIBUV=0 in the environment (or
# `?use_libuv=0` in an env:// or tcp:// init_method) selects the old backend (PyTorch's tutorial
# "Introduction to Libuv TCPStore Backend").
_NO_LIBUV = re.compile(r"use_libuv was requested but PyTorch was buil[dt] without libuv support")


def no_libuv(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_LIBUV, ("without libuv",))
    if hit is None:
        return []
    return [Signal("no_libuv", Category.PLATFORM_UNSUPPORTED,
                   "torch's distributed store asked for its libuv backend (the default from torch "
                   "2.4), and this torch (a Windows build) was built without libuv",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch", "os")]), NAMED,
                   [Remedy(summary="Select the store's older backend: USE_LIBUV=0 in the "
                           "environment of every process the launcher starts, set before "
                           "launching (cmd: the command below; PowerShell: $env:USE_LIBUV = \"0\"), "
                           "or ?use_libuv=0 in the init_method URL.",
                           commands=["set USE_LIBUV=0"]),
                    Remedy(summary="Or run single-process (one GPU needs no process group: "
                           "`accelerate config` with one process, num_processes=1), or run "
                           "multi-GPU on Linux (on Windows, under WSL2), where NCCL exists too.")],
                   details={"source": "pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp; "
                                      "PyTorch's tutorial on the libuv TCPStore backend"})]


# NCCL's bootstrap (the TCP exchange of ranks' addresses before any GPU traffic) failing:
# NCCL_DEBUG=INFO lines "misc/socket.cc:567 -> 2" then "bootstrap.cc:270 -> 2" (2: ncclSystemError)
# and, without the debug log, "unhandled system error" from init. Only the socket interface it
# picked matters there (NVIDIA/nccl#1000: NCCL_SOCKET_IFNAME, the interface the nodes reach each
# other on; docker0, lo and virtual bridges are common wrong picks).
_BOOTSTRAP = re.compile(r"NCCL INFO (?:misc/socket\.cc|bootstrap\.cc):\d+ -> [23]\b|"
                        r"NCCL WARN (?:Bootstrap|socket)\w*[^\n]{0,40}(?:failed|[Cc]onnect)")


def bootstrap(ctx: Context) -> List[Signal]:
    hit = ctx.first(_BOOTSTRAP, ("socket.cc", "bootstrap"))
    if hit is None:
        return []
    return [Signal("nccl_bootstrap", Category.COLLECTIVE_FAILED,
                   "NCCL's bootstrap, the TCP exchange of the ranks' addresses before any GPU "
                   "traffic, failed on its socket: the network interface NCCL picked does not "
                   "reach the other nodes (a container's bridge, loopback, or an interface only "
                   "some nodes share)", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Tell NCCL which interface the nodes reach each other on, on "
                           "every rank (its name from `ip -brief addr`, the same subnet on all "
                           "nodes), and rerun with the debug log to confirm the pick.",
                           commands=["export NCCL_SOCKET_IFNAME=eth0", "export NCCL_DEBUG=INFO"]),
                    Remedy(summary="In containers, run them on the host network (docker run "
                           "--network=host) so that each sees the real interfaces.")],
                   details={"source": "NVIDIA/nccl#1000 (NCCL_SOCKET_IFNAME for the bootstrap)"})]


# NCCL's kernels asking for more shared memory per block than the GPU allows: "ncclMaxSharedMem
# 82240 exceeds device/fn maxSharedMem 79856" (NCCL's INFO log), NCCL 2.25.1 on GeForce RTX 50
# GPUs (sm_120); NCCL 2.26.2 runs there (NVIDIA/nccl-tests#287, confirmed by NVIDIA and the
# reporter). pip's torch loads NCCL from the nvidia-nccl-cu12 / -cu13 wheel.
_NCCL_SMEM = re.compile(r"ncclMaxSharedMem (\d+) exceeds device/fn maxSharedMem (\d+)")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)(?:\+cuda(\d+))?")


def nccl_shared_memory(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NCCL_SMEM, ("ncclmaxsharedmem",))
    if hit is None:
        return []
    version = ctx.first(_NCCL_VERSION, ("nccl version",))
    which = f"NCCL {version[1].group(1)}" if version else "this NCCL"
    cuda = ctx.torch_cuda_stated
    major = version[1].group(2) if version and version[1].group(2) else \
        (str(cuda.major) if cuda is not None and cuda.major >= 12 else "12")
    return [Signal("nccl_shared_memory", Category.COLLECTIVE_FAILED,
                   f"{which}'s kernels ask for {hit[1].group(1)} bytes of shared memory per block, "
                   f"more than this GPU allows ({hit[1].group(2)}): a release from before this "
                   "GPU's architecture (GeForce RTX 50, sm_120, from NCCL 2.26.2)",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(version[0])] if version else [])]),
                   NAMED,
                   [Remedy(summary="Upgrade NCCL to 2.26.2 or later: for pip's torch, its "
                           "nvidia-nccl wheel (nvidia-nccl-cu12, or -cu13 for a CUDA 13 torch); a "
                           "system NCCL (nccl-tests, NGC images) from NVIDIA's packages.",
                           commands=[command("pip", "install", "--upgrade",
                                             f"nvidia-nccl-cu{major}>=2.26.2")])],
                   details={"source": "NVIDIA/nccl-tests#287 (NCCL 2.25.1 on RTX 5090; 2.26.2)"})]
