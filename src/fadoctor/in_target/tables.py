"""What the target side knows by name: the flash-attention families, the distributions and the
environment variables worth reporting (the parent reads the same tables)."""

import re
from typing import Any, Dict  # noqa: F401 (the type comment below: Python 3.8 syntax)

# Families: the distributions that provide each one (canonical names) and the modules to import.
# The parent imports this table too, so both sides agree on what "installed" means.
FAMILIES = {  # type: Dict[str, Dict[str, Any]]
    "fa2": {"distributions": ["flash-attn"], "modules": ["flash_attn"],
            "extensions": ["flash_attn_2_cuda", "flash_attn_cuda"],
            "markers": ["flash_attn_2_cuda", "flash_attn_cuda"],
            # flash-attention's optional csrc/ extensions, each built by its own setup.py.
            "optional": ["dropout_layer_norm", "rotary_emb", "xentropy_cuda_lib",
                         "fused_softmax_lib", "fused_dense_lib"]},
    "fa3": {"distributions": ["flash-attn-3"],
            "modules": ["flash_attn_interface", "flash_attn_3.flash_attn_interface"],
            "extensions": ["flash_attn_3._C", "flash_attn_3_cuda", "flash_attn_3_gpu"],
            "markers": ["flash_attn_interface", "flash_attn_3"]},
    # FA4 JIT-compiles each kernel on first call (seconds); its own compile cache persists
    # compiled kernels when enabled, read at import (flash_attn/cute/cache_utils.py,
    # FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED / _DIR, at every tag from fa4-v4.0.0.beta0).
    "fa4": {"distributions": ["flash-attn-4", "flash-attn4"], "modules": ["flash_attn.cute"],
            "extensions": [], "markers": [],
            "jit_cache": {"enable": "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED",
                          "dir": "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR"}},
    # The vllm-flash-attn 2.6.2 wheel: package vllm_flash_attn, extension vllm_flash_attn_2_cuda.
    "vllm_fa": {"distributions": ["vllm-flash-attn"], "modules": ["vllm_flash_attn"],
                "extensions": ["vllm_flash_attn_2_cuda"],
                "markers": ["vllm_flash_attn", "vllm_flash_attn_2_cuda"]},
}

# Distributions worth reporting (canonical names or prefixes ending in "-").
INTERESTING = (
    "torch", "flash-attn", "flash-attn-3", "flash-attn-4", "flash-attn4", "vllm-flash-attn",
    "xformers", "triton", "pytorch-triton", "pytorch-triton-rocm", "transformers", "accelerate",
    "peft", "vllm", "deepspeed", "einops", "ninja", "packaging", "unsloth", "bitsandbytes",
    "nvidia-", "cuda-", "apache-tvm-ffi", "quack-kernels", "torch-c-dlpack-ext",
)

# Environment variables that change what torch and flash-attention do (exact names, or prefixes
# ending in "_").
ENVIRONMENT = (
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
    "LD_PRELOAD", "PYTHONPATH", "TORCH_CUDA_ARCH_LIST", "CUDA_MODULE_LOADING", "MAX_JOBS",
    "NVCC_THREADS", "FLASH_ATTENTION_", "FLASH_ATTN_", "PYTORCH_", "TORCHDYNAMO_", "TORCHINDUCTOR_",
    "TORCH_CUDNN_", "CUTE_DSL_", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "BUILD_TARGET",
    "GPU_ARCHS",
)

# Environment variables that steer torch.distributed, NCCL and gloo, compared across the ranks of
# a job (exact names, or prefixes ending in "_").
DISTRIBUTED_ENVIRONMENT = (
    "NCCL_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "TORCH_SYMM_MEM_", "GLOO_", "NVSHMEM_", "UCX_",
    "FI_", "OMP_NUM_THREADS", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING",
    "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE",
)

# The most characters of an error message or traceback a record carries.
TAIL = 4000


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def interesting(name: str) -> bool:
    for item in INTERESTING:
        if name == item or (item.endswith("-") and name.startswith(item)):
            return True
    return False
