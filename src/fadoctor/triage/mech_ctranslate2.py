"""CTranslate2 (faster-whisper, WhisperX) refusing its device, and cuDNN 9's sub-libraries not
found (pure):
- "Requested float16 compute type, but the target device or backend do not support efficient
  float16 computation." (OpenNMT/CTranslate2 src/types.cc, unsupported_compute_type: raised when
  the requested type is not one mayiuse_float16 allows, with no fallback: the CPU, or a GPU
  without fast fp16);
- "This CTranslate2 package was not compiled with CUDA support": a CPU-only wheel (the platform's
  wheels carry no CUDA build) asked for device="cuda";
- cuDNN 9 loads its sub-libraries (libcudnn_cnn.so.9, libcudnn_ops.so.9 ...) at run time by name:
  "Unable to load any of {libcudnn_cnn.so.9.1.0, ...}" then "Invalid handle. Cannot load symbol
  cudnnCreate...": the library was found by the program but its siblings are not on the loader's
  path (pip's nvidia-cudnn-cu12 installs them under site-packages/nvidia/cudnn/lib);
- CTranslate2's own "Library libcublas.so.11 is not found or cannot be loaded": its wheels load
  cuBLAS and cuDNN by name, of the CUDA they were built with. OpenNMT/CTranslate2's release notes:
  2.0.0's Linux wheels need CUDA 11.x; 4.0.0 moved to CUDA 12; 4.5.0's Python package "supports
  CUDNN 9 and is no longer compatible with CUDNN 8"."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_COMPUTE = re.compile(r"Requested (float16|int8_float16|int16|int8|bfloat16|int8_bfloat16) compute "
                      r"type, but the target device or backend do not support efficient")
_NO_CUDA = re.compile(r"This CTranslate2 package was not compiled with CUDA support")
_CUDNN_SUB = re.compile(r"Unable to load any of \{(libcudnn_\w+)\.so\.(\d+)[^}]{0,200}\}|"
                        r"Could not load library (libcudnn_\w+)\.so\.(\d+)|"
                        # Windows: "Could not locate cudnn_ops64_9.dll", retold "cudnn
                        # ops64_9.dll is not found"
                        r"(cudnn[_ ][a-z_]+?)64_(\d+)\.dll (?:is )?not found|Could not locate "
                        r"(cudnn_[a-z_]+?)64_(\d+)\.dll")
_CPU = re.compile(r"device\s*=\s*['\"]cpu['\"]|\bon (?:the )?CPU\b|--device cpu", re.I)


def compute_type(ctx: Context) -> List[Signal]:
    hit = ctx.first(_COMPUTE, ("compute type, but the target device",))
    if hit is None:
        return []
    asked = hit[1].group(1)
    cpu = None if ctx.gpu or ctx.text.containing(('device="cuda"', "device='cuda'")) else \
        ctx.first(_CPU, ("cpu",))
    where = "the CPU" if cpu else (f"{ctx.gpu[0]}" if ctx.gpu else "this device")
    return [Signal("ct2_compute_type", Category.DTYPE_UNSUPPORTED,
                   f"CTranslate2 was asked for {asked} on {where}, which it does not run "
                   f"efficiently{'' if cpu else ' (an older GPU without fast fp16)'}, and the "
                   "requested type is not a fallback request",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(cpu[0])] if cpu else []),
                           *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary="Ask for a compute type this device runs: compute_type=\"int8\" "
                           "(or \"float32\"; \"auto\" lets CTranslate2 choose) in WhisperModel(...) "
                           "/ --compute_type int8.")],
                   details={"source": "OpenNMT/CTranslate2 src/types.cc (unsupported_compute_type)"})]


def cpu_only_package(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_CUDA, ("not compiled with cuda support",))
    if hit is None:
        return []
    return [Signal("ct2_cpu_only", Category.WRONG_WHEEL,
                   "the installed CTranslate2 is a CPU-only build, and CUDA was asked for: its "
                   "wheels for this platform carry no CUDA build", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Run it on the CPU (device=\"cpu\", compute_type=\"int8\"), or on "
                           "a Linux x86_64 or Windows machine whose CTranslate2 wheel has CUDA, or "
                           "build CTranslate2 from source with -DWITH_CUDA=ON for this platform.")])]


_CT2_LIB = re.compile(r"Library (libcublas|libcudnn\w*)\.so\.(\d+) is not found or cannot be loaded|"
                      # Windows: cublas64_12.dll, cudnn_ops_infer64_8.dll
                      r"Library (cublas|cudnn\w*?)64_(\d+)\.dll is not found or cannot be loaded")
_CT2_WORDS = ("ctranslate2", "faster_whisper", "faster-whisper", "whisperx", "whisper")
CT2_RELEASES = ("OpenNMT/CTranslate2 releases: v2.0.0 (CUDA 11.x), v4.0.0 (CUDA 12), v4.5.0 "
                "(cuDNN 9, no longer cuDNN 8)")


def ct2_library(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CT2_LIB, ("is not found or cannot be loaded",))  # cuDNN's own: mech_cudnn_lib
    if hit is None:
        return []
    groups = [g for g in hit[1].groups() if g]
    windows = hit[1].group(3) is not None
    library, major = groups[0], int(groups[1])
    printed = f"{library}64_{major}.dll" if windows else f"{library}.so.{major}"
    library = library if library.startswith("lib") else "lib" + library
    # the CUDA 11 and 12 wheels carry a -cuXX suffix; CUDA 13's do not (nvidia-cuda-runtime==13.0.96)
    cublas = f"nvidia-cublas-cu{major}" if major <= 12 else "nvidia-cublas"
    if library == "libcublas":
        fix = ("CTranslate2 before 4.0 is built with CUDA 11: upgrade ctranslate2 to 4.x for CUDA "
               "12, or install CUDA 11's cuBLAS (nvidia-cublas-cu11)" if major == 11 else
               f"this CTranslate2 needs CUDA {major}'s cuBLAS: install it ({cublas}) or the "
               "CTranslate2 release built for the CUDA you have")
        command_line = ("pip install --upgrade ctranslate2" if major == 11
                        else f"pip install {cublas}")
    else:
        fix = ("CTranslate2 4.4.0 and older use cuDNN 8, 4.5.0 and later cuDNN 9 (torch 2.4 and "
               "later bundle cuDNN 9): upgrade ctranslate2 to 4.5+ to share torch's cuDNN 9, or "
               "pin ctranslate2==4.4.0 with cuDNN 8 installed" if major == 8 else
               f"this CTranslate2 needs cuDNN {major}: install it (nvidia-cudnn-cu12) and put its "
               "lib folder on the loader's path")
        command_line = ("pip install --upgrade ctranslate2" if major == 8
                        else "pip install nvidia-cudnn-cu12")
    if windows:  # the wheels' DLLs sit in site-packages\nvidia\...\bin, which is not on PATH
        fix += (f"; on Windows it looks for {printed} on PATH: the CUDA {major} "
                "toolkit's bin folder, or the pip wheel's site-packages\\nvidia\\...\\bin added "
                "to PATH")
    return [Signal("ct2_library", Category.CUDA_RUNTIME_MISMATCH,
                   f"CTranslate2 cannot load {printed}: it was built for another CUDA "
                   "or cuDNN major than the one installed", [ctx.quote(hit[0])], NAMED + 2,
                   [Remedy(summary=fix[0].upper() + fix[1:] + ".", commands=[command_line])],
                   details={"source": CT2_RELEASES})]


def cudnn_sublibrary(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUDNN_SUB, ("unable to load any of", "could not load library", ".dll"))
    if hit is None:
        return []
    library, major = [g for g in hit[1].groups() if g is not None][:2]
    library = library.replace(" ", "_")
    ct2 = [Remedy(summary="CTranslate2 4.5.0 and later need cuDNN 9; where this torch bundles "
                  "cuDNN 8 (torch before 2.4), pin ctranslate2==4.4.0, the last built with cuDNN "
                  "8, or upgrade torch to one with cuDNN 9.",
                  commands=['pip install "ctranslate2==4.4.0"'])] \
        if major == "9" and ctx.text.containing(_CT2_WORDS) else []
    return [Signal("cudnn_sublibrary", Category.CUDA_RUNTIME_MISMATCH,
                   f"cuDNN {major}'s {library} could not be loaded: the program needs cuDNN {major} "
                   "and its sub-libraries are not on the loader's path (or another cuDNN major is "
                   "installed)", dedupe([ctx.quote(hit[0]), *ctx.quotes("cudnn")]), NAMED,
                   [Remedy(summary=f"Install cuDNN {major} and put its lib folder on the loader's "
                           f"path: pip's nvidia-cudnn-cu12 (cuDNN {major}) keeps it in the lib "
                           "folder under the path this prints; add that .../lib to "
                           "LD_LIBRARY_PATH. Or install the program's release built for the cuDNN "
                           "you have (torch's own cuDNN major).",
                           commands=[command("python", "-c", "import os, nvidia.cudnn; "
                                             "print(os.path.dirname(nvidia.cudnn.__file__))")]),
                    *ct2], details={"source": CT2_RELEASES} if ct2 else {})]


# cuDNN 8 on Windows: its sub-libraries (cudnn_cnn_infer64_8.dll, cudnn_ops_infer64_8.dll ...) link
# zlibwapi.dll, which cuDNN 8's Windows installation guide has installed separately ("Installing
# Zlib": zlibwapi.dll's folder on PATH); without it Windows refuses the DLL with error 126 (a
# dependent module not found) although the DLL itself is where the program looks.
_CUDNN8_DLL = re.compile(r"Could not load library (cudnn_\w+64_8\.dll)\. Error code 126|"
                         # cuDNN 8's own words when it looks for the DLL first
                         r"Could not locate (zlibwapi\.dll)\. Please make sure it is in your "
                         r"library path")


def cudnn8_zlib(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUDNN8_DLL, ("error code 126", "could not locate zlibwapi"))
    if hit is None:
        return []
    what = (f"Windows cannot load {hit[1].group(1)} because a DLL it depends on is missing "
            "(error 126)") if hit[1].group(1) else "cuDNN 8 cannot find zlibwapi.dll"
    return [Signal("cudnn8_zlib", Category.NOT_INSTALLED,
                   f"{what}: cuDNN 8's Windows sub-libraries need zlibwapi.dll, which cuDNN's "
                   "installation guide has installed separately", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Install zlib's zlibwapi.dll (the x64 build cuDNN 8's Windows "
                           "installation guide links) and put its folder on PATH, or copy it "
                           "beside the cudnn64_8.dll files; then start the program again.")])]


# CTranslate2's own cuBLAS wording ("cuBLAS failed with status " + the status: src/cuda/utils.h;
# torch says "CUDA error: CUBLAS_STATUS_..."). NOT_SUPPORTED comes from its int8 GEMMs
# (cublasGemmEx on 8-bit inputs): on Blackwell GeForce cards (sm_120) every int8 compute type
# fails and float16, bfloat16 and float32 work (OpenNMT/CTranslate2#1865; #1937 disables int8 on
# sm_120). faster-whisper's compute_type="auto" and "default" pick an int8 type.
_CUBLAS_UNSUPPORTED = re.compile(r"cuBLAS failed with status CUBLAS[_ ]STATUS[_ ]?NOT[_ ]SUPPORT")


def int8_gemm(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUBLAS_UNSUPPORTED, ("cublas failed with status",))
    if hit is None:
        return []
    gpu = ctx.gpu
    blackwell = gpu is not None and gpu[1] is not None and gpu[1].major == 12
    where = f"{gpu[0]} (sm_120)" if blackwell else "this GPU"  # type: ignore[index]
    return [Signal("ct2_int8_gemm", Category.DTYPE_UNSUPPORTED,
                   f"CTranslate2's int8 matrix multiply (an int8 compute type, which \"auto\" picks) "
                   f"is refused by cuBLAS on {where}: the float types run there",
                   dedupe([ctx.quote(hit[0]), *([gpu[2]] if gpu else [])]), NAMED,
                   [Remedy(summary="Ask for a float compute type: compute_type=\"float16\" (or "
                           "\"bfloat16\", \"float32\") in WhisperModel(...) / --compute_type "
                           "float16, or the app's COMPUTE_TYPE setting."),
                    Remedy(summary="Or upgrade ctranslate2 to a release with "
                           "OpenNMT/CTranslate2#1937 (int8 disabled on sm_120), where \"auto\" "
                           "no longer picks int8 there.")],
                   details={"source": "OpenNMT/CTranslate2#1865, #1937"})]
