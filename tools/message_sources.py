"""The remedy rule for each (source, category) of data/messages.yaml, and the catalogued messages
of sources other than flash-attention (each with its citation), for tools/gen_messages.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

import cudnn_sources
import cutlass_dsl_sources as dsl
import serve_sources as serve
import torch_sources

TORCH_EXCERPTS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "torch_excerpts.yaml"

REMEDY: Dict[str, str] = {
    "gpu_unsupported": "use SDPA (attn_implementation='sdpa') or eager on this GPU, or the "
                       "flash-attn generation that supports its architecture",
    "head_dim_unsupported": "a head dim this GPU supports, flash-attn >= 2.5.5 for head dim "
                            "256 backward on consumer GPUs, or SDPA",
    "dtype_unsupported": "run attention in fp16 or bf16 (torch_dtype=torch.bfloat16)",
    "rocm": "build for a gfx arch the release lists (GPU_ARCHS), or use the Triton AMD backend "
            "(FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE), or SDPA",
    "build_toolchain": "install a CUDA toolkit (nvcc) at or above the floor the message names and "
                       "point CUDA_HOME at it, or install a prebuilt wheel",
    "platform_unsupported": "use Linux (or WSL2) where prebuilt wheels exist, or SDPA",
    "not_installed": "install the package's declared dependencies (for flash-attn-4: "
                     "nvidia-cutlass-dsl, apache-tvm-ffi, quack-kernels) into this interpreter",
    "version_conflict": "install the dependency versions the release declares (flash-attn-4 "
                        "pins nvidia-cutlass-dsl in its pyproject.toml)",
    # tools/build_sources.py's build frontends, compilers and loader
    "build_isolation": "install torch (and packaging, ninja) first, then build without isolation: "
                       "python -m pip install flash-attn==VERSION --no-build-isolation; in a uv "
                       "project no-build-isolation-package = [\"flash-attn\"] under [tool.uv]",
    "build_resources": "bound the parallel compile jobs with MAX_JOBS (about 5 GB of RAM each with "
                       "NVCC_THREADS=4), or install a prebuilt wheel",
    "glibc_too_old": "install a build made for this system's glibc / libstdc++, or a newer OS",
    "cuda_runtime_mismatch": "import torch first and install the CUDA runtime of torch's CUDA "
                             "major, or a flash-attn build for torch's CUDA",
    "torch_version_mismatch": "reinstall flash-attn built for the installed torch (the matching "
                              "prebuilt wheel, or a build with --no-build-isolation)",
}
# Where the generation decides the fix: FA3 is Hopper-only, FA4 lists its compute capabilities.
BY_SOURCE: Dict[Tuple[str, str], str] = {
    ("fa3", "gpu_unsupported"): "FlashAttention-3 (hopper/) runs on Hopper (sm90) only: use "
                                "flash-attn 2.x on Ampere/Ada, or SDPA",
    ("fa3-py", "build_toolchain"): "build FlashAttention-3 with CUDA >= 12.3 (nvcc -V), "
                                   "CUDA_HOME pointing at it",
    ("ninja", "build_toolchain"): "read the compiler error above ninja's line; a killed compiler "
                                  "means MAX_JOBS, else install a prebuilt wheel",
    ("nvcc", "build_toolchain"): "build with the Visual Studio the message names, or "
                                 "-allow-unsupported-compiler through NVCC_APPEND_FLAGS",
    ("cudahost", "build_toolchain"): "build with the newest gcc / Visual Studio this CUDA accepts "
                                     "(the message names it; CC/CXX and -ccbin), or "
                                     "-allow-unsupported-compiler through NVCC_APPEND_FLAGS",
    ("fa4", "gpu_unsupported"): "use flash-attn-4 only on the compute capabilities the message "
                                "lists; flash-attn 2.x on Ampere/Ada, or SDPA",
}


# Where the message itself decides the fix: (a search on the printed form, the fix).
BY_TEXT: Tuple[Tuple[str, str], ...] = (
    # setup.py's assert (v2.7.4 and later): an archive such as GitHub's Download ZIP has no
    # submodules
    (r"csrc/\w+ is missing", "build from a recursive git clone (git clone --recursive) or from "
                              "the release sdist, whose archive carries the submodules"),
    (r"does not match the version used to compile Pytorch",
     "build with the CUDA toolkit of torch's CUDA (python -c 'import torch; "
     "print(torch.version.cuda)'), CUDA_HOME pointing at it, or install torch for this toolkit"),
    (r"not supported on AMD", "pass dropout_p=0.0 on AMD's Triton backend, or build the "
                              "Composable Kernel backend (unset FLASH_ATTENTION_TRITON_AMD_ENABLE)"),
)


def remedy(source: str, category: str, printed: str = "") -> str:
    for search, fix in BY_TEXT:
        if re.search(search, printed):
            return fix
    return BY_SOURCE.get((source, category), REMEDY.get(category, ""))


def other_entries() -> List[Dict[str, object]]:
    import build_sources
    import hf_sources
    from gen_messages import pattern  # imported here: gen_messages imports this module

    fixtures = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
    return [*torch_sources.entries(torch_sources.load(TORCH_EXCERPTS), pattern),
            *build_sources.entries(build_sources.load(fixtures / "build_excerpts.yaml"), pattern,
                                   remedy),
            *hf_sources.entries(pattern), *serve.entries(serve.load(), pattern),
            *cudnn_sources.entries(pattern)]


def with_dsl(catalog: List[Dict[str, object]], pattern: object) -> List[Dict[str, object]]:
    """The catalog with each `No module named 'cutlass...'` given the nvidia-cutlass-dsl releases
    that hold the module, and the DSL's varying modules no other source catalogues."""
    recorded = dsl.load()
    found = [*catalog, *dsl.entries(recorded, pattern, {str(e["printed"]) for e in catalog})]
    dsl.annotate(found, recorded)
    return found
