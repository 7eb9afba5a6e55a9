"""llama.cpp's and ollama's CUDA backend (ggml-cuda) finding no code for the GPU in a kernel:
ggml/src/ggml-cuda/common.cuh no_device_code() prints "ERROR: CUDA kernel %s has no device code
compatible with CUDA arch %d. ggml-cuda.cu was compiled for: %s" and traps. A flash-attention
kernel (flash_attn_ext_*) without code for the arch is the FA path chosen on a GPU whose variant
was not built: flash attention off; another kernel is a build without the GPU's arch (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import IMPLIED, LOGGED, NAMED, Signal, dedupe

_NO_CODE = re.compile(r"(CUDA|HIP) kernel (\w{1,80}) has no device code compatible with (?:CUDA|HIP) "
                      r"arch (\d{2,4})(?:\. ggml-cuda\.cu was compiled for: ([\d, ]{1,200}))?")
SOURCE = "ggml-org/llama.cpp ggml/src/ggml-cuda/common.cuh (no_device_code)"


# the same check in ggml-cuda.cu before the kernel name was printed (llama.cpp to early 2024):
# "ERROR: ggml-cuda was compiled without support for the current GPU architecture."
_NO_ARCH = re.compile(r"ggml-cuda was compiled without support for the current GPU architecture")


def _without_arch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_ARCH, ("compiled without support for the current gpu",))
    if hit is None:
        return []
    gpu = ctx.gpu
    cc = gpu[1] if gpu else None
    arch = f"{cc.major}{cc.minor}" if cc is not None else None
    target = f"sm_{arch} ({gpu[0] if gpu else ''})" if arch else "this GPU's architecture"
    return [Signal("ggml_no_device_code", Category.NO_KERNEL_IMAGE,
                   f"this ggml-cuda build (llama.cpp, or an app bundling it) has no code for "
                   f"{target}: its CUDA architectures leave the GPU out",
                   dedupe([ctx.quote(hit[0]), *([gpu[2]] if gpu else [])]), NAMED,
                   [Remedy(summary="Use a build compiled for this GPU: the app's previous release "
                           "if it ran there, or a build from source with the GPU's "
                           "architecture in CMAKE_CUDA_ARCHITECTURES"
                           + (f" ({arch})" if arch else " (its compute capability without the "
                              "dot: 61 for a GTX 10xx, 75 for an RTX 20xx)") + ".",
                           commands=[f"cmake -B build -DGGML_CUDA=ON "
                                     f"-DCMAKE_CUDA_ARCHITECTURES={arch or 'native'}"])],
                   details={"source": "ggml-org/llama.cpp ggml-cuda.cu bad_arch() (late 2023 to "
                                      "early 2024)"})]


def no_device_code(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_CODE, ("has no device code compatible",))
    if hit is None:
        return _without_arch(ctx)
    kernel, arch, built = hit[1].group(2), hit[1].group(3), hit[1].group(4)
    sm = f"sm_{int(arch) // 10}"
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    rebuild = Remedy(summary=f"Or a llama.cpp/ollama build with code for {sm} "
                     f"(CMAKE_CUDA_ARCHITECTURES={int(arch) // 10})"
                     + (f"; this one was compiled for {built.strip()}" if built else "") + ".",
                     commands=[f"cmake -B build -DGGML_CUDA=ON "
                               f"-DCMAKE_CUDA_ARCHITECTURES={int(arch) // 10}"])
    if "flash_attn" in kernel:
        return [Signal("ggml_no_device_code", Category.GPU_UNSUPPORTED,
                       f"ggml's flash-attention kernel {kernel} has no code for {sm}: the "
                       "flash-attention path was chosen on a GPU whose variant is not built",
                       quotes, NAMED,
                       [Remedy(summary="Turn flash attention off for this GPU: ollama "
                               "OLLAMA_FLASH_ATTENTION=0 (or a release that no longer forces it "
                               "for the model), llama.cpp -fa off.",
                               commands=["export OLLAMA_FLASH_ATTENTION=0"]), rebuild],
                       details={"source": SOURCE})]
    return [Signal("ggml_no_device_code", Category.NO_KERNEL_IMAGE,
                   f"ggml's kernel {kernel} has no code for {sm}: the build's CUDA architectures "
                   "leave this GPU out", quotes, NAMED, [rebuild], details={"source": SOURCE})]


# ollama's AMD discovery (ollama discover/amd_linux.go and amd_windows.go): "amdgpu is not
# supported (supported types:[gfx1030 gfx1100 ...])" gpu_type=gfx1032: its ROCm libraries carry
# code for the listed targets only; on Linux HSA_OVERRIDE_GFX_VERSION makes the runtime treat the
# GPU as another target (ollama skips the check with it set), on Windows it is not supported.
_AMD_LIST = re.compile(r"amdgpu is not supported \(supported types:\s*\[([\w\s]{1,400})\]\)\W{0,4}"
                       r"(?:gpu_type=(gfx[0-9a-f]{3,5}))?")
_GFX = re.compile(r"gpu_type=(gfx[0-9a-f]{3,5})")


def hsa_version(gfx: str) -> str:
    """gfx1030 -> 10.3.0, gfx906 -> 9.0.6, gfx90a -> 9.0.10 (the override's major.minor.step)."""
    digits = gfx[3:]
    major, rest = (digits[:2], digits[2:]) if len(digits) == 4 else (digits[:1], digits[1:])
    return f"{int(major)}.{int(rest[0], 16)}.{int(rest[1:], 16)}"


def amd_target(ctx: Context) -> List[Signal]:
    hit = ctx.first(_AMD_LIST, ("amdgpu is not supported",))
    if hit is None:
        return []
    supported = hit[1].group(1).split()
    gfx_hit = hit[1].group(2) or next((m.group(1) for _, m in ctx.find(_GFX, ("gpu_type=",))), None)
    windows = "amd_windows" in ctx.text.lines[hit[0]] or "windows" in ctx.low(hit[0])
    fixes: List[Remedy] = []
    # RDNA targets of one generation run each other's code (gfx1031/1032 as gfx1030, gfx1101 as
    # gfx1100); the gfx9 line mixes generations under one prefix (gfx906 Vega, gfx908 CDNA1)
    sibling = next((s for s in supported if gfx_hit and len(gfx_hit) == 7 and len(s) == 7
                    and s[:-1] == gfx_hit[:-1]), None)
    if gfx_hit and sibling and not windows:
        fixes.append(Remedy(summary=f"{gfx_hit} shares its ISA generation with {sibling}, which "
                            "this build has code for: have the ROCm runtime treat the GPU as "
                            f"{sibling} (HSA_OVERRIDE_GFX_VERSION={hsa_version(sibling)}) in the "
                            "server's environment.",
                            commands=[f"export HSA_OVERRIDE_GFX_VERSION={hsa_version(sibling)}"]))
    fixes.append(Remedy(summary=("Or" if fixes else "Build") + " ollama (or llama.cpp) from source "
                        f"with its ROCm targets including {gfx_hit or 'this GPU'} "
                        "(AMDGPU_TARGETS), or use a release whose bundled ROCm still lists it; "
                        + ("on Windows HSA_OVERRIDE_GFX_VERSION is not supported." if windows
                           else "the override works only between targets of one generation.")))
    return [Signal("amd_target", Category.ROCM,
                   f"this build's ROCm libraries have code for {', '.join(supported)} only, and "
                   f"the GPU is {gfx_hit or 'another target'}", [ctx.quote(hit[0])], NAMED, fixes,
                   details={"source": "ollama discover/amd_linux.go, amd_windows.go"})]


# ggml's CUDA init when cudaGetDeviceCount fails (ggml-cuda.cu, ggml_init_cublas, early 2024: "no
# CUDA devices found, CUDA will be disabled"; later ggml_cuda_init: "failed to initialize CUDA:
# <cudaGetErrorString>"): with the GPU and driver present (nvidia-smi works), the usual failure is
# the build's CUDA runtime needing a newer driver than the one installed
# (a runtime error the catalog names a cause for, the driver library not the kernel module's or
# forward compatibility on a GPU without it, is the catalog's: cudart-010, cudart-005)
_NO_DEVICES = re.compile(r"ggml_init_cublas: no CUDA devices found|ggml_cuda_init: failed to "
                         r"initialize CUDA: (?!no CUDA-capable device|system has unsupported "
                         r"display driver|forward compatibility was attempted)")


def no_devices(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_DEVICES, ("no cuda devices found", "failed to initialize cuda"))
    if hit is None:
        return []
    driver_cuda = ctx.seen.get("driver_cuda")
    said = f" (nvidia-smi says the driver runs CUDA {driver_cuda})" if driver_cuda else ""
    return [Signal("ggml_no_devices", Category.DRIVER_TOO_OLD,
                   "ggml's CUDA backend could not open the GPU (cudaGetDeviceCount failed): with "
                   "a working nvidia-smi, the CUDA toolkit it was built with is newer than the "
                   f"driver supports{said}",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("driver_cuda", "nvcc", "driver")]),
                   LOGGED,
                   [Remedy(summary="Compare the CUDA version nvidia-smi prints (the newest the "
                           "driver runs) with the toolkit that built it (nvcc --version): update "
                           "the NVIDIA driver to one for that CUDA, or rebuild with the toolkit "
                           "of the driver's CUDA version (the same version on both sides).",
                           commands=["nvidia-smi", "nvcc --version"])],
                   details={"source": "ggml-org/llama.cpp ggml-cuda.cu (ggml_init_cublas, "
                                      "ggml_cuda_init)"})]


# Ollama's hardware support page (docs/gpu.md, docs.ollama.com/gpu): "Ollama supports Nvidia GPUs
# with compute capability 5.0+"; GPU selection by CUDA_VISIBLE_DEVICES
OLLAMA_FLOOR = Version("5.0")


def ollama_floor(ctx: Context) -> List[Signal]:
    if ctx.has("ollama") is None:
        return []
    old = [g for g in ctx.seen.gpus if g.vendor == "nvidia" and g.cc and
           Version(g.cc) < OLLAMA_FLOOR]
    if not old:
        return []
    gpu = min(old, key=lambda g: Version(g.cc or "0"))
    others = [g for g in ctx.seen.gpus if g.vendor == "nvidia" and g.cc
              and Version(g.cc) >= OLLAMA_FLOOR]
    fixes = [Remedy(summary=f"Ollama's CUDA builds support compute capability {OLLAMA_FLOOR}+ "
                    f"(Maxwell and newer): the {gpu.name} (compute capability {gpu.cc}, Kepler "
                    "or older) cannot run them. "
                    + (f"Take it out, or hide it so Ollama uses the {others[0].name} "
                       "(CUDA_VISIBLE_DEVICES set to that GPU's index or UUID, from nvidia-smi "
                       "-L)." if others else
                       "Use a GPU of compute capability 5.0 or newer; a build from source "
                       "for that arch is unsupported."),
                    commands=["nvidia-smi -L"])]
    return [Signal("ollama_gpu_floor", Category.GPU_UNSUPPORTED,
                   f"Ollama supports NVIDIA GPUs of compute capability {OLLAMA_FLOOR} and newer; "
                   f"the {gpu.name} is {gpu.cc}", dedupe([gpu.quote]), IMPLIED, fixes,
                   details={"source": "ollama docs/gpu.md (Hardware support)"})]


# ggml's HIP build (ggml-cuda.cu compiled with hipcc) without code for the GPU's gfx target:
# "CUDA error 98 at ggml-cuda.cu:6246: invalid device function" / "ROCm error: ...: invalid device
# function" (98 is hipErrorInvalidDeviceFunction). llama.cpp compiles HIP code for the targets its
# CMake is given (docs/build.md: -DGPU_TARGETS=gfx1030, earlier AMDGPU_TARGETS); a build without
# the list, or in a container that cannot see the GPU when it builds, may leave the GPU out.
_HIP_INVALID = re.compile(r"(?:CUDA|ROCm|HIP) error(?: \d+)?[^\n]{0,120}?ggml[^\n]{0,120}?invalid "
                          r"device function|ggml[^\n]{0,120}?(?:CUDA|ROCm|HIP) error[^\n]{0,120}?"
                          r"invalid device function", re.I)
_ON_ROCM = ("rocm", "hip", "radeon", "gfx", "amd ")


def hip_target(ctx: Context) -> List[Signal]:
    hit = ctx.first(_HIP_INVALID, ("invalid device function",))
    if hit is None or not (ctx.amd or ctx.text.containing(_ON_ROCM)):
        return []
    gfx = ctx.seen.get("amd_arch")
    target = gfx or "the GPU's gfx target (rocminfo | grep gfx)"
    quotes = dedupe([ctx.quote(hit[0]), *ctx.quotes("amd_arch")])
    return [Signal("ggml_hip_target", Category.ROCM,
                   f"this llama.cpp/ggml HIP build has no code for {gfx or 'the GPU'}: its "
                   "kernels were compiled for other gfx targets", quotes, NAMED,
                   [Remedy(summary=f"Rebuild llama.cpp with its HIP targets naming {target}: "
                           f"-DGPU_TARGETS={gfx or '<gfx>'} (older CMake files: -DAMDGPU_TARGETS), "
                           "with HIPCXX and HIP_PATH from hipconfig as its docs/build.md gives "
                           "them.",
                           commands=["cmake -S . -B build -DGGML_HIP=ON "
                                     f"-DGPU_TARGETS={gfx} -DCMAKE_BUILD_TYPE=Release"]
                           if gfx else ["rocminfo | grep gfx"])],
                   details={"source": "ggml-org/llama.cpp docs/build.md (HIP: GPU_TARGETS)"})]
