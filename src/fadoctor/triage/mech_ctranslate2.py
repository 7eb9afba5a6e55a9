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
  path (pip's nvidia-cudnn-cu12 installs them under site-packages/nvidia/cudnn/lib)."""

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
                        r"Could not load library (libcudnn_\w+)\.so\.(\d+)")
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


def cudnn_sublibrary(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUDNN_SUB, ("unable to load any of", "could not load library"))
    if hit is None:
        return []
    found = hit[1]
    library, major = (found.group(1), found.group(2)) if found.group(1) else (
        found.group(3), found.group(4))
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
                                             "print(os.path.dirname(nvidia.cudnn.__file__))")])])]
