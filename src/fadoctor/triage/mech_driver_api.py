"""The CUDA driver API's own error names (CUresult, cuda.h), which JAX, OpenMM, TensorRT and
other libraries print where torch prints the runtime's sentence: the few that name an
environment cause, read from cuda.h (CUDA 13.0): CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222) "the
provided PTX was compiled with an unsupported toolchain", CUDA_ERROR_NO_BINARY_FOR_GPU (209)
"there is no kernel image available that is suitable for the device", CUDA_ERROR_NO_DEVICE (100)
"no CUDA-capable devices were detected by the installed CUDA driver"; and CUDA_ERROR_NOT_FOUND
(500, the runtime's "named symbol not found"), which a kernel lookup returns when the binary
holds no code for this GPU's architecture (pure)."""

from __future__ import annotations

import re
from typing import List, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe
from fadoctor.triage.text import Quote
from fadoctor.triage.torch_remedies import newest_cuda

_NAME = re.compile(r"\bCUDA_ERROR_(UNSUPPORTED_PTX_VERSION|NO_BINARY_FOR_GPU|NO_DEVICE)\b")


def driver_api(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NAME, ("cuda_error_",))
    if hit is None:
        return []
    name = hit[1].group(1)
    quotes = dedupe([ctx.quote(hit[0]), *ctx.quotes("driver")])
    if name == "UNSUPPORTED_PTX_VERSION":
        newest = newest_cuda(ctx.matrix, ctx.driver) if ctx.driver is not None else None
        runs = (f" Driver {ctx.driver} JIT-compiles PTX of CUDA {newest} and older: install the "
                f"package's build for CUDA {newest} or older (a conda cudatoolkit={newest}), or"
                if newest is not None else " Or install the package's build for the CUDA this "
                "driver supports (nvidia-smi's \"CUDA Version\"), or")
        return [Signal("driver_api", Category.DRIVER_TOO_OLD,
                       "the driver cannot JIT-compile the PTX it was given: the PTX was made by a "
                       "newer CUDA toolkit than this driver supports (CUDA_ERROR_UNSUPPORTED_PTX_"
                       "VERSION)", quotes, NAMED,
                       [Remedy(summary="Upgrade the NVIDIA driver to the CUDA toolkit's own driver "
                               "(or newer): PTX needs a driver at least as new as the toolkit "
                               f"that produced it.{runs} keep the newer toolkit with a newer "
                               "driver.")])]
    if name == "NO_BINARY_FOR_GPU":
        gpu = f" ({ctx.gpu[0]}, compute capability {ctx.gpu[1]})" if ctx.gpu and ctx.gpu[1] else ""
        return [Signal("driver_api", Category.NO_KERNEL_IMAGE,
                       f"the binary has no kernel for this GPU{gpu}: it was compiled for other "
                       "architectures and carries no PTX the driver could compile "
                       "(CUDA_ERROR_NO_BINARY_FOR_GPU)", quotes, NAMED,
                       [Remedy(summary="Install the package's build that includes this GPU's "
                               "architecture, or build it here with the GPU's arch in its arch "
                               "list (TORCH_CUDA_ARCH_LIST for torch extensions, "
                               "CMAKE_CUDA_ARCHITECTURES for CMake projects).")])]
    return [Signal("driver_api", Category.NO_GPU,
                   "the CUDA driver sees no CUDA-capable GPU (CUDA_ERROR_NO_DEVICE): none is "
                   "installed or visible to this process", quotes, NAMED,
                   [Remedy(summary="Check that nvidia-smi lists the GPU here; in a container, "
                           "run it with the GPU passed in (docker run --gpus all, with the "
                           "NVIDIA Container Toolkit); check CUDA_VISIBLE_DEVICES is not empty.",
                           commands=["nvidia-smi"])])]


# a kernel looked up by a binary that has no code for this GPU ("CUDA error: "named symbol not
# found" at run_fmha.cu:160", cudaFuncSetAttribute on a kernel pointer): the binary was built for
# other architectures (or another platform's GPUs, as an SBSA wheel on a Jetson)
_SYMBOL = re.compile(r"named symbol not found|CUDA_ERROR_NOT_FOUND\b")
# the library a report's paths name: its installed package, or its kernel cache (~/.cache/NAME-triton)
_LIBRARY = re.compile(r"(?:site|dist)-packages[/\\]([a-z][a-z0-9_]{2,40})[/\\]|"
                      r"[/\\]\.cache[/\\]([a-z][a-z0-9_-]{2,40}?)(?:-triton)?[/\\]")


def symbol_not_found(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SYMBOL, ("named symbol not found", "cuda_error_not_found"))
    named: List[Tuple[str, Version, Quote]] = []
    for g in ctx.seen.gpus:
        if g.vendor == "nvidia" and g.cc and g.name not in (n for n, _, _ in named):
            named.append((g.name, Version(g.cc), g.quote))
    if hit is None or not named:
        return []
    found = {m.group(1) or m.group(2) for _, m in ctx.find(_LIBRARY, ("-packages", ".cache"))}
    found -= {"torch", "triton", "huggingface", "pip", "torch_extensions"}
    library = found.pop() if len(found) == 1 else "that library"
    archs = [f"{name} (sm_{cc.major}{cc.minor})" for name, cc, _ in named]
    # one GPU named is the one that fails; of several (one works, another fails) none is assumed
    gpu = archs[0] if len(archs) == 1 else "the GPU it fails on (the report names " + \
        ", ".join(archs) + ")"
    ccs = {cc for _, cc, _ in named}
    arch = f"sm_{named[0][1].major}{named[0][1].minor}" if len(ccs) == 1 else "that GPU's sm"
    return [Signal("symbol_not_found", Category.NO_KERNEL_IMAGE,
                   f"a kernel the program looks up is not in its binary for {gpu}: {library} was "
                   "built for other GPU architectures (\"named symbol not found\")",
                   dedupe([ctx.quote(hit[0]), *(q for _, _, q in named)]), NAMED,
                   [Remedy(summary=f"Use the library's build that includes {arch} (or build it "
                           "with that arch in its list); if its releases do not support that GPU "
                           f"at all, turn {library}'s kernels off (most have an option to fall "
                           "back to PyTorch) or run on a GPU it supports.")])]


# A driver API entry point the loaded driver library does not export: the program's CUDA was
# written against a newer driver ("symbol lookup for cuCtxCreate_v3 failed", ollama's
# discover/gpu.go loading nvcuda.dll or libcuda.so by dlsym; the dynamic loader's "undefined
# symbol: cuXxx" is mech_symbols'). cuda.h names each API's versioned entry point (the _v2/_v3 suffixes are
# the newer drivers' ABI); ollama's own sentence for cudaErrorInsufficientDriver (35) from
# cudaSetDevice is "your nvidia driver is too old or missing" (ollama gpu/gpu_info_cudart.c).
_ENTRY = re.compile(r"symbol lookup for (cu[A-Z]\w{2,60}) failed")
_OLLAMA_OLD = re.compile(r"your nvidia driver is too old or missing")


def entry_point(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ENTRY, ("symbol lookup for cu",))
    ollama = ctx.first(_OLLAMA_OLD, ("driver is too old or missing",))
    if hit is None and ollama is None:
        return []
    symbol = hit[1].group(1) if hit is not None else None
    quotes = dedupe([*([ctx.quote(hit[0])] if hit else []),
                     *([ctx.quote(ollama[0])] if ollama else []), *ctx.quotes("driver")])
    said = (f"the NVIDIA driver library lacks {symbol}, an entry point of the CUDA driver API "
            "that newer drivers export" if symbol else
            "the CUDA runtime found the NVIDIA driver too old for it (or none)")
    return [Signal("driver_entry_point", Category.DRIVER_TOO_OLD,
                   f"{said}: the program's CUDA needs a newer driver than the one installed",
                   quotes, NAMED if symbol else NAMED - 10,
                   [Remedy(summary="Upgrade (or reinstall) the NVIDIA driver to one for the CUDA "
                           "version the program was built with (nvidia-smi's \"CUDA Version\" "
                           "is the newest the installed driver runs); a driver library left "
                           "from an older install (another libcuda or nvcuda.dll found first) "
                           "does the same.", commands=["nvidia-smi"])],
                   details={"source": "cuda.h's versioned entry points; ollama "
                                      "gpu/gpu_info_cudart.c"})]
