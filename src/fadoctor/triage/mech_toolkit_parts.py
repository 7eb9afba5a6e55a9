"""Parts of a CUDA install that do not fit the rest (pure):
- a cuDNN system package built for a newer CUDA than the driver runs: Debian/Ubuntu's libcudnn8
  packages carry the CUDA they are built for in their version (8.9.3.28-1+cuda12.1, NVIDIA's
  cuDNN repository), and cuDNN then fails at its first call ("CUDNN_STATUS_NOT_INITIALIZED")
  under a driver whose CUDA (nvidia-smi's "CUDA Version") is of an older major;
- numba's CUDA JIT without NVVM, the CUDA toolkit's compiler library: "libNVVM cannot be found.
  Do `conda install cudatoolkit`" (numba/cuda/cudadrv/nvvm.py); pip's torch brings CUDA's
  runtime libraries, not NVVM, and NeMo's transducer (RNNT) loss is numba CUDA code;
- a package imported from a folder with no __init__.py, which Python takes as a namespace
  package: "cannot import name 'cuda' from 'cuda' (unknown location)" (a namespace package has
  no file, hence the location): a folder left behind by an upgrade in place that changed the
  package's layout (cuda-python 12.6 to 12.8: NVIDIA/cuda-python#476), or a same-named folder;
- nvJitLink older than the compiler whose LTO-IR it links: "ERROR 4 in
  nvvmAddNVVMContainerToProgram, may need newer version of nvJitLink library" (nvJitLink's own
  log: its NVVM reads IR of its own CUDA minor or older, the CUDA nvJitLink documentation's
  compatibility rule), where NVRTC of a newer CUDA (a pip wheel of another major) produced it."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.mech_api_skew import dist_of
from fadoctor.triage.signal import IMPLIED, NAMED, Signal, dedupe
from fadoctor.triage.stated_fix import installable

_CUDNN_PKG = re.compile(r"\blibcudnn(\d)\S*\s+\S*?(\d+\.\d+\.\d+\.\d+)-\d+\+cuda(\d+)\.(\d+)")
_CUDNN_FAIL = re.compile(r"CUDNN_STATUS_(?:NOT_INITIALIZED|INTERNAL_ERROR|EXECUTION_FAILED)|"
                         r"cuDNN (?:error|failed)", re.I)
_NVVM = re.compile(r"libNVVM cannot be found")
_NAMESPACE = re.compile(r"cannot import name ['\"`](\w{1,60})['\"`] from ['\"`]([\w.]{1,80})['\"`] "
                        r"\(unknown location\)")


def cudnn_package(ctx: Context) -> List[Signal]:
    pkg = ctx.first(_CUDNN_PKG, ("libcudnn",), ("+cuda",))
    driver_cuda = parse_version(ctx.seen.get(o.DRIVER_CUDA))
    if pkg is None or driver_cuda is None:
        return []
    major, cudnn, built = pkg[1].group(1), pkg[1].group(2), int(pkg[1].group(3))
    if built <= driver_cuda.major:
        return []
    failed = ctx.first(_CUDNN_FAIL, ("cudnn",))
    return [Signal("cudnn_package_cuda", Category.CUDA_RUNTIME_MISMATCH,
                   f"the system's cuDNN ({cudnn}) is the build for CUDA {built}.{pkg[1].group(4)}, "
                   f"and the driver runs CUDA {driver_cuda} at most: cuDNN cannot start under it",
                   dedupe([*([ctx.quote(failed[0])] if failed else []), ctx.quote(pkg[0]),
                           *ctx.quotes("driver")]), NAMED if failed else IMPLIED,
                   [Remedy(summary=f"Install the cuDNN {major} build for CUDA {driver_cuda.major} "
                           f"(NVIDIA's packages name it: libcudnn{major}=<version>-1+cuda"
                           f"{driver_cuda.major}.x; for the programs that use CUDA "
                           f"{driver_cuda.major}), or upgrade the NVIDIA driver to one that runs "
                           f"CUDA {built}.",
                           commands=["apt-cache policy libcudnn" + major])])]


def numba_nvvm(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NVVM, ("libnvvm cannot be found",))
    if hit is None:
        return []
    return [Signal("numba_nvvm", Category.NOT_INSTALLED,
                   "numba's CUDA JIT cannot find libNVVM, the CUDA toolkit's compiler library: "
                   "pip's torch installs CUDA's runtime libraries, not the toolkit's NVVM",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Install a CUDA toolkit that numba finds: the cudatoolkit (or "
                           "cuda-nvcc) conda package, as numba's own message says, or NVIDIA's "
                           "CUDA toolkit with CUDA_HOME set to it; or run in a container that "
                           "ships it (NVIDIA's NeMo and PyTorch containers do).",
                           commands=["conda install -c conda-forge cudatoolkit"])],
                   details={"source": "numba/cuda/cudadrv/nvvm.py (libNVVM cannot be found)"})]


def namespace_leftover(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NAMESPACE, ("(unknown location)",))
    if hit is None:
        return []
    name, module = hit[1].group(1), hit[1].group(2)
    top = module.split(".")[0]
    dist = dist_of(top)
    return [Signal("namespace_leftover", Category.VERSION_CONFLICT,
                   f"Python found {module} as a folder without __init__.py (a namespace package: "
                   f"hence 'unknown location'), so it has no {name}: a folder left by an "
                   "upgrade in place that changed the package's layout, or a same-named folder "
                   "on the path",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Uninstall what provides {top} (pip removes the files it "
                           f"installed; delete a leftover site-packages/{top} folder if one "
                           "remains), then install it again; and check no folder named "
                           f"{top} sits in the directory the program runs from.",
                           commands=[command("pip", "uninstall", "-y", dist),
                                     command("pip", "install", dist)] if installable(dist)
                           else [])])]


_JITLINK = re.compile(r"may need newer version of nvJitLink library")


def jitlink_older(ctx: Context) -> List[Signal]:
    hit = ctx.first(_JITLINK, ("nvjitlink",))
    if hit is None:
        return []
    return [Signal("nvjitlink_older", Category.CUDA_RUNTIME_MISMATCH,
                   "nvJitLink is older than the compiler that produced the code it links (LTO-IR "
                   "from an NVRTC or nvcc of a newer CUDA): the process loads the CUDA libraries "
                   "of two releases", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Make the NVRTC (libnvrtc) the program compiles with the same "
                           "CUDA as its nvJitLink, or older: the libnvrtc of the CUDA the program "
                           "was built for (libnvrtc.so.12 for a CUDA 12 build; pip's "
                           "nvidia-cuda-nvrtc-cu12), not a newer major another package installed "
                           "beside it; or upgrade nvJitLink to that newer CUDA (the program's "
                           "release for it); `pip list` shows the nvidia-* wheels of each CUDA.",
                           commands=["pip list"])])]
