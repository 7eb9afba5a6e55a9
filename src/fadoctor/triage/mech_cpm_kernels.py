"""cpm_kernels, the CUDA kernels ChatGLM's int4/int8 quantization runs (its remote code's
quantization.py): it loads the CUDA libraries itself with ctypes (cpm_kernels/library/base.py:
ctypes.util.find_library("cudart"), "cuda", "cublasLt", "nvrtc"), and a name find_library does not
resolve — the loader's cache and LD_LIBRARY_PATH; a pip torch's own copy under
site-packages/nvidia is neither — makes each call raise "Library cudart is not initialized". And
ChatGLM's quantization.py sets `kernels = None` when cpm_kernels does not import, so the first
quantized layer raises "'NoneType' object has no attribute 'int4WeightExtractionHalf'" (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

SOURCE = "cpm_kernels/library/base.py (Lib: ctypes.util.find_library); ChatGLM's quantization.py"
_NOT_INITIALIZED = re.compile(r"Library (cudart|cuda|cublasLt|cublas|nvrtc) is not initialized")
_NO_KERNELS = re.compile(r"'NoneType' object has no attribute '(int[48]WeightExtraction\w{0,10}|"
                         r"int4WeightCompression\w{0,10})'")


def cpm_kernels(ctx: Context) -> List[Signal]:
    missing = ctx.first(_NO_KERNELS, ("weightextraction", "weightcompression"))
    if missing is not None:
        return [Signal("cpm_kernels_missing", Category.NOT_INSTALLED,
                       "the quantized ChatGLM model runs its int4/int8 layers with cpm_kernels, "
                       "which is not installed (or fails to import): its quantization code set "
                       "the kernels to None", [ctx.quote(missing[0])], NAMED,
                       [Remedy(summary="Install cpm_kernels into the environment that runs the "
                               "model (it needs a CUDA GPU), or load the unquantized model.",
                               commands=[command("pip", "install", "cpm_kernels")])],
                       details={"source": SOURCE})]
    hit = ctx.first(_NOT_INITIALIZED, ("is not initialized",))
    if hit is None:
        return []
    name = hit[1].group(1)
    driver = name == "cuda"
    return [Signal("cpm_kernels_library", Category.CUDA_RUNTIME_MISMATCH,
                   f"cpm_kernels (ChatGLM's quantization kernels) looks up lib{name}.so with "
                   "ctypes' find_library, which finds nothing here: "
                   + ("the NVIDIA driver's libcuda.so is not on the loader's path" if driver else
                      f"no CUDA toolkit's lib{name} is on the loader's path (a pip torch's own "
                      "copy under site-packages/nvidia is not searched)"),
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=("Put the driver's libcuda.so where the loader finds it (WSL: "
                                    "/usr/lib/wsl/lib on LD_LIBRARY_PATH); check with "
                                    "`ldconfig -p | grep libcuda`.") if driver else
                           (f"Install a CUDA toolkit runtime with lib{name}.so where the loader "
                            "finds it: conda's cudatoolkit in this environment, or the system's "
                            "CUDA with its lib64 on LD_LIBRARY_PATH; check with `ldconfig -p | "
                            f"grep lib{name}`."),
                           commands=[] if driver else ["conda install cudatoolkit"]),
                    Remedy(summary="Or load the model unquantized (no quantize(4)/int4 "
                           "checkpoint), which does not use cpm_kernels.")],
                   details={"source": SOURCE})]
