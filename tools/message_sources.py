"""The remedy rule for each (source, category) of data/messages.yaml, and the catalogued messages
of sources other than flash-attention (each with its citation), for tools/gen_messages.py."""

from __future__ import annotations

from typing import Dict, List, Tuple

import cutlass_dsl_sources as dsl
import serve_sources as serve

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
}
# Where the generation decides the fix: FA3 is Hopper-only, FA4 lists its compute capabilities.
BY_SOURCE: Dict[Tuple[str, str], str] = {
    ("fa3", "gpu_unsupported"): "FlashAttention-3 (hopper/) runs on Hopper (sm90) only: use "
                                "flash-attn 2.x on Ampere/Ada, or SDPA",
    ("fa3-py", "build_toolchain"): "build FlashAttention-3 with CUDA >= 12.3 (nvcc -V), "
                                   "CUDA_HOME pointing at it",
    ("fa4", "gpu_unsupported"): "use flash-attn-4 only on the compute capabilities the message "
                                "lists; flash-attn 2.x on Ampere/Ada, or SDPA",
}


def remedy(source: str, category: str) -> str:
    return BY_SOURCE.get((source, category), REMEDY.get(category, ""))


def other_entries() -> List[Dict[str, object]]:
    from gen_messages import pattern  # gen_messages imports this module: import it late
    return [*serve.entries(serve.load(), pattern)]


def with_dsl(catalog: List[Dict[str, object]], pattern: object) -> List[Dict[str, object]]:
    """The catalog with each `No module named 'cutlass...'` given the nvidia-cutlass-dsl releases
    that hold the module, and the DSL's varying modules no other source catalogues."""
    recorded = dsl.load()
    found = [*catalog, *dsl.entries(recorded, pattern, {str(e["printed"]) for e in catalog})]
    dsl.annotate(found, recorded)
    return found
