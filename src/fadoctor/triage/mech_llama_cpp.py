"""llama-cpp-python built without a GPU backend: `pip install llama-cpp-python` builds llama.cpp
from source, for the CPU unless CMAKE_ARGS turns a backend on, and an upgrade rebuilds it the same
way (its README: "This will also build llama.cpp from source"; CUDA: CMAKE_ARGS="-DGGML_CUDA=on";
a rebuild needs --upgrade --force-reinstall --no-cache-dir). llama.cpp's system info then says
BLAS = 0, and no layer is offloaded to the GPU (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

SOURCE = ("abetlen/llama-cpp-python README.md (Installation; Supported Backends: CUDA; Upgrading "
          "and Reinstalling)")
# llama.cpp's system_info ("AVX = 1 | ... | BLAS = 0 |"), llm_load_tensors' offload count
_CPU_BUILD = re.compile(r"\bBLAS ?= ?0\b|\boffloaded 0/\d{1,4} layers to GPU")
_PACKAGE = ("llama-cpp-python", "llama_cpp", "llama-cpp", "llama cpp python")


def cpu_build(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CPU_BUILD, ("blas", "offloaded 0/"))
    named = ctx.has(*_PACKAGE) if hit is not None else None
    wanted = ctx.has("gpu", "cuda", "n_gpu_layers") if named is not None else None
    if hit is None or named is None or wanted is None:
        return []
    return [Signal("llama_cpp_cpu", Category.WRONG_WHEEL,
                   "this llama-cpp-python was built for the CPU only (llama.cpp reports "
                   f"\"{hit[1].group(0)}\"): pip builds it from source, with no GPU backend unless "
                   "CMAKE_ARGS turns one on, and an upgrade rebuilt it that way",
                   dedupe([ctx.quote(hit[0]), named, wanted]), NAMED,
                   [Remedy(summary="Rebuild it with CUDA (the nvcc of a CUDA toolkit on PATH): "
                           "CMAKE_ARGS turns the backend on, and --force-reinstall --no-cache-dir "
                           "keep pip from reusing the CPU build (releases before llama.cpp's "
                           "GGML_ options, early 2024, take -DLLAMA_CUBLAS=on).",
                           commands=['CMAKE_ARGS="-DGGML_CUDA=on" pip install --upgrade '
                                     '--force-reinstall --no-cache-dir llama-cpp-python']),
                    Remedy(summary="Then load the model with its layers on the GPU "
                           "(Llama(model_path, n_gpu_layers=-1)).")],
                   details={"source": SOURCE})]
