"""onnxruntime-gpu's CUDA execution provider failing to load the CUDA and cuDNN libraries its build
needs (pure). Each release is built for one CUDA major and one cuDNN major (ONNX Runtime's "CUDA
Execution Provider" requirements page: 1.19 and later, CUDA 12.x with cuDNN 9 by default on the
package index; 1.15-1.18, CUDA 11.8 with cuDNN 8; 1.13-1.14, CUDA 11.6; 1.9-1.12, CUDA 11.4;
1.7-1.8, CUDA 11.0; "ONNX Runtime built with cuDNN 8.x is not compatible with cuDNN 9.x, and vice
versa"; PyTorch 2.3 ships cuDNN 8, 2.4 and later cuDNN 9). The provider says so as:
- "CUDA_PATH is set but CUDA wasnt able to be loaded. Please install the correct version of CUDA
  and cuDNN ..." (Windows, to 1.18),
- "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*" (1.19 on),
- "[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 ... when trying to load
  onnxruntime_providers_cuda.dll" (Windows' "module not found", for the DLLs that one needs)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

SOURCE = "onnxruntime.ai docs, CUDA Execution Provider: Requirements"
_FAILED = re.compile(r"CUDA_PATH is set but CUDA wasn'?t able to be loaded|Failed to create "
                     r"CUDAExecutionProvider|LoadLibrary failed with error 126[^\n]{0,200}"
                     r"onnxruntime_providers_cuda|"
                     # ONNX Runtime's status text itself ("[ONNXRuntimeError] : 1 : FAIL : ...")
                     r"\bFAIL : LoadLibrary failed with error 126|Failed to load library "
                     r"libonnxruntime_providers_cuda\.so", re.I)
_REQUIRE = re.compile(r"Require cuDNN (\d+)\.\* and CUDA (\d+)\.\*")
# (first release, CUDA, cuDNN) of the index's onnxruntime-gpu builds, newest first
_BUILDS: Tuple[Tuple[str, str, str], ...] = (
    ("1.19", "12.x", "9"), ("1.15", "11.8", "8"), ("1.13", "11.6", "8"), ("1.9", "11.4", "8"),
    ("1.7", "11.0", "8"), ("1.5", "10.2", "8"), ("1.2", "10.1", "7"), ("1.0", "10.0", "7"))


def built_for(release: Version) -> Optional[Tuple[str, str]]:
    """The CUDA and cuDNN an onnxruntime-gpu release from the package index needs."""
    for first, cuda, cudnn in _BUILDS:
        if release >= Version(first):
            return cuda, cudnn
    return None


def _release(ctx: Context) -> Optional[Version]:
    stated = ctx.package("onnxruntime-gpu", "onnxruntime")
    try:
        return Version(stated.value) if stated is not None else None
    except InvalidVersion:
        return None


def cuda_provider(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FAILED, ("cuda_path is set", "cudaexecutionprovider", "onnxruntime_providers",
                              "fail : loadlibrary"))
    if hit is None:
        return []
    required = ctx.first(_REQUIRE, ("require cudnn",))
    release = _release(ctx)
    needs = ((f"{required[1].group(2)}.x", required[1].group(1)) if required
             else built_for(release) if release else None)
    what = (f"CUDA {needs[0]} and cuDNN {needs[1]}" if needs else
            "the CUDA and cuDNN majors its build was made for")
    which = f"onnxruntime-gpu {release}" if release else "onnxruntime-gpu"
    fixes = [Remedy(summary=f"Give {which} what it was built for, {what}: install them (or, "
                    "beside PyTorch, import torch before onnxruntime so that torch's own CUDA and "
                    "cuDNN libraries are loaded first; onnxruntime 1.21 and later can also "
                    "preload them with onnxruntime.preload_dlls()).",
                    commands=[command("python", "-c", "import torch, onnxruntime; "
                                      "print(torch.__version__, torch.version.cuda, "
                                      "torch.backends.cudnn.version(), onnxruntime.__version__, "
                                      "onnxruntime.get_available_providers())")]),
             _matching(ctx)]
    return [Signal("onnxruntime_cuda", Category.CUDA_RUNTIME_MISMATCH,
                   f"{which}'s CUDA provider could not load the CUDA libraries it needs ({what}): "
                   "they are missing, or of another major than its build",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(required[0])] if required else [])]),
                   NAMED, fixes, details={"source": SOURCE})]


def _matching(ctx: Context) -> Remedy:
    """The onnxruntime-gpu for the torch beside it: its CUDA major and cuDNN major."""
    text = ("Or install the onnxruntime-gpu built for the CUDA and cuDNN this environment has: "
            "1.19 or later for CUDA 12 with cuDNN 9 (PyTorch 2.4 and later), 1.18.x from the "
            "package index for CUDA 11.8 with cuDNN 8; or run on the CPU provider meanwhile.")
    torch, cuda = ctx.torch, ctx.torch_cuda_stated
    if torch is None or torch >= Version("2.4"):
        return Remedy(summary=text, commands=[command("pip", "install", "--force-reinstall",
                                                      "onnxruntime-gpu>=1.19")])
    if cuda is not None and cuda.major == 11:
        return Remedy(summary=text, commands=[command("pip", "install", "--force-reinstall",
                                                      "onnxruntime-gpu==1.18.1")])
    return Remedy(summary=text + f" torch {torch} uses cuDNN 8: with CUDA 12 that is "
                  "onnxruntime-gpu 1.17 or 1.18 built for CUDA 12, from ONNX Runtime's own "
                  "package feed (its install page names it), not the package index.")
