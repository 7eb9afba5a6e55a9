"""Where the driver's and CUDA's libraries come from outside the Python environment (pure):
- Jetson containers: the l4t images of JetPack 4 (L4T r32) carry no CUDA libraries of their own;
  the NVIDIA container runtime mounts the host's CUDA, cuDNN and TensorRT into them
  (dusty-nv/jetson-containers docs; NVIDIA's l4t-base container notes), so a container started
  without that runtime misses libcurand.so.10 and the like. And an L4T container runs only on a
  host of its own L4T major (r32 is JetPack 4, r34/r35 JetPack 5, r36 JetPack 6);
- WSL2: the Windows driver exposes libcuda.so through /usr/lib/wsl/lib (NVIDIA's CUDA on WSL
  user guide), which the loader's path must hold."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_L4T_IMAGE = re.compile(r"\b(?:dustynv/[\w.-]+|nvcr\.io/nvidia/l4t-[\w.-]+|l4t-[\w.-]+):[\w.-]*?"
                        r"\br(\d{2})\.(\d)", re.I)
_CUDA_LIB = re.compile(r"(lib(?:cu\w{1,20}|cudnn\w{0,20}|nvinfer\w{0,20}|nvToolsExt)\.so(?:\.\d+)*)"
                       r": cannot open shared object file")
# the host's L4T release: "r32.6", "L4T R32.5.1", "JetPack 4.6"
_HOST_L4T = re.compile(r"\b(?:on|host|with|version)\s+(?:L4T\s+)?r(\d{2})\.(\d)\b|\bL4T\s+R?(\d{2})\.(\d)",
                       re.I)


def jetson_runtime(ctx: Context) -> List[Signal]:
    image = ctx.first(_L4T_IMAGE, ("l4t", "dustynv"))
    if image is None:
        return []
    missing = ctx.first(_CUDA_LIB, ("cannot open shared object",))
    major = int(image[1].group(1))
    host = next(((i, m) for i, m in ctx.find(_HOST_L4T, ("r3", "l4t"))
                 if int(m.group(1) or m.group(3)) != major), None)
    if host is not None:
        found = host[1]
        host_major = int(found.group(1) or found.group(3))
        host_release = f"r{host_major}.{found.group(2) or found.group(4)}"
        return [Signal("l4t_container_host", Category.DRIVER_TOO_OLD,
                       f"the container is built for L4T r{major} and the host runs L4T "
                       f"{host_release}: an L4T container runs only "
                       "on a host of its own L4T major (its CUDA comes from that JetPack)",
                       dedupe([ctx.quote(image[0]), ctx.quote(host[0])]), NAMED,
                       [Remedy(summary=f"Take the container tag built for the host's L4T "
                               f"{host_release} (the image's tags name it), or flash the "
                               f"host with the JetPack of L4T r{major}.",
                               commands=["cat /etc/nv_tegra_release"])])]
    if missing is None or major > 32:  # from JetPack 5 the images carry their own CUDA
        return []
    return [Signal("jetson_runtime", Category.NO_GPU,
                   f"{missing[1].group(1)} is missing in a JetPack 4 (L4T r{major}) container: "
                   "these images take CUDA, cuDNN and TensorRT from the host through the NVIDIA "
                   "container runtime, so the container was started without it",
                   dedupe([ctx.quote(missing[0]), ctx.quote(image[0])]), NAMED + 3,
                   [Remedy(summary="Start the container with the NVIDIA runtime (docker run "
                           "--runtime nvidia ...), or make it Docker's default: \"default-runtime\": "
                           "\"nvidia\" in /etc/docker/daemon.json, then restart Docker.",
                           commands=["cat /etc/docker/daemon.json"])])]


_NO_LIBCUDA = re.compile(r"libcuda\.so(?:\.1)?: cannot open shared object file")
_WSL = re.compile(r"\bWSL2?\b|/usr/lib/wsl|microsoft-standard", re.I)


def wsl_libcuda(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_LIBCUDA, ("libcuda.so",))
    wsl = ctx.first(_WSL, ("wsl", "microsoft-standard"))
    if hit is None or wsl is None:
        return []
    return [Signal("wsl_libcuda", Category.CUDA_RUNTIME_MISMATCH,
                   "under WSL2 the driver's libcuda.so lives in /usr/lib/wsl/lib, and the loader's "
                   "path here does not reach it (what failed to load needed the driver, not a "
                   "missing CUDA library)", dedupe([ctx.quote(hit[0]), ctx.quote(wsl[0])]), NAMED + 3,
                   [Remedy(summary="Put /usr/lib/wsl/lib on the loader's path (after it, any folders "
                           "`printenv LD_LIBRARY_PATH` shows, joined by colons), and check that "
                           "libcuda.so.1 is there; a libcuda.so symlink beside it helps programs "
                           "that ask for the unversioned name.",
                           commands=["printenv LD_LIBRARY_PATH",
                                     "export LD_LIBRARY_PATH=/usr/lib/wsl/lib",
                                     "ls -l /usr/lib/wsl/lib"])])]
