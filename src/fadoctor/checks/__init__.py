"""The checks: small pure functions with stable IDs, listed once in `ALL_CHECKS`."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Dict, Tuple

from fadoctor.checks import (
    binary,
    current,
    flash,
    flash_requires,
    hf,
    kernels,
    model,
    sdpa,
    system,
    torch_requires,
)
from fadoctor.checks.base import Check, Skip
from fadoctor.checks.compile import check_compile

if TYPE_CHECKING:
    from fadoctor.model.spec import ModelFacts

ALL_CHECKS: Tuple[Check, ...] = (
    Check("FAD101", "nvidia-driver", "An NVIDIA driver is loaded and reports GPUs",
          "Reads the driver through NVML (nvidia-ml-py), else nvidia-smi, else "
          "/proc/driver/nvidia/version. Fails when no driver is found: flash-attention runs only "
          "on NVIDIA GPUs (AMD GPUs use its ROCm backends, reported instead).",
          system.check_driver),
    Check("FAD102", "torch-import", "torch is installed and imports in the target interpreter",
          "Imports torch in a child process of the target interpreter. A missing torch, an "
          "ImportError, a crash or a hang is classified (undefined symbol, missing library, "
          "glibc) and reported with the error text.",
          system.check_torch_import),
    Check("FAD103", "torch-cuda-build", "torch is a CUDA build",
          "torch.version.cuda is None for CPU-only builds (e.g. 2.13.0+cpu); flash-attention "
          "needs a CUDA build. The remedy names the CUDA variant of the same torch release that "
          "the driver runs.",
          system.check_torch_cuda_build),
    Check("FAD104", "driver-cuda", "The driver is new enough for torch's CUDA runtime",
          "Compares the driver version with the matrix: below the CUDA major's floor "
          "({driver_floors}) the runtime cannot start (error); below the toolkit's own driver it runs "
          "under minor-version compatibility with a limited feature set (warning).",
          system.check_driver_cuda),
    Check("FAD105", "torch-sees-gpu", "torch can use the GPUs the driver reports",
          "torch.cuda.is_available() must be True when the driver reports GPUs. Names "
          "CUDA_VISIBLE_DEVICES when it hides them, and torch's own reason otherwise.",
          system.check_torch_sees_gpu),
    Check("FAD106", "torch-arch", "torch has kernels for each GPU's architecture",
          "Holds each GPU's compute capability against torch.cuda.get_arch_list(): SASS (sm_XY) "
          "runs on the same major with an equal or higher minor, PTX (compute_XY) is JIT-compiled "
          "for equal or newer GPUs, arch-specific sm_XYa only on that arch.",
          system.check_torch_arch),
    Check("FAD107", "duplicate-installs", "No relevant distribution is installed twice",
          "Two copies of torch or flash-attn on sys.path (user site, --target folders, "
          "PYTHONPATH) make the imported one differ from the one pip reports.",
          system.check_duplicates),
    Check("FAD108", "data-current", "fadoctor's data knows the releases installed here",
          "Holds torch, flash-attn, flash-attn-4, torch's CUDA and the driver against the newest "
          "release the matrix has (its data_date). A newer one is reported as newer than the "
          "data of that date, and the other checks judge it by the binaries, imports and kernels "
          "- never as unsupported for a missing row.",
          current.check_data_current),
    Check("FAD109", "torch-requirements", "torch's own requirements are of versions it accepts",
          "Holds torch's Requires-Dist against the installed distributions, as `pip check` "
          "does: a triton (or nvidia-* runtime wheel) outside the range torch pins breaks "
          "torch.compile, Triton kernels and FlashAttention-4.",
          torch_requires.check_torch_requirements),
    Check("FAD110", "flash-attn-installed", "A flash-attention family is installed",
          "Looks for FlashAttention-2 (flash-attn), FlashAttention-3 (flash_attn_3), "
          "FlashAttention-4 (flash-attn-4) and vllm-flash-attn by their distributions and "
          "modules, without importing them.",
          flash.check_installed),
    Check("FAD111", "flash-attn-import", "Each installed flash-attention family imports",
          "Imports each family in the target interpreter, after torch, isolated so that a crash "
          "or hang is a finding. Undefined torch/c10/at symbols mean a build for another torch; "
          "std::string mangling ('Ss' vs '__cxx11') tells a C++11 ABI mismatch and which side is "
          "which; a missing libcudart.so.N a CUDA mismatch; GLIBC_x/GLIBCXX_x a system too old.",
          flash.check_import),
    Check("FAD112", "flash-attn-gpu", "Each installed family supports the GPUs here",
          "FlashAttention-2 needs compute capability {fa2_min_cc}+ ({fa2_gates}); "
          "FlashAttention-3 is built for Hopper (sm_90a, plus sm_80 kernels); FlashAttention-4 "
          "is written for Hopper and Blackwell, and its gates differ by beta and direction (no "
          "backward, so no training, on sm8x at any beta).",
          flash.check_gpu_support),
    Check("FAD113", "flash-attn-requirements", "Each family's torch and Python requirements hold",
          "Holds the installed versions against the matrix: the README's minimum torch, FA3's "
          "torch >= {fa3_min_torch}, FA4's Python >= {fa4_min_python}, and whether the release "
          "built wheels for this torch minor (if not, the installed copy was compiled and must be "
          "rebuilt after every torch upgrade).",
          flash_requires.check_requirements),
    Check("FAD120", "sdpa-fallback", "PyTorch SDPA has a fast backend for this GPU",
          "Asks torch which scaled_dot_product_attention backends (flash, efficient, cudnn) "
          "accept a bf16 training shape on this GPU (torch.backends.cuda.can_use_*), with torch's "
          "reasons when not; for torch < 2.2, predicts from the matrix's arch ranges.",
          sdpa.check_sdpa),
    Check("FAD121", "transformers-attention", "transformers runs the attn_implementation asked "
          "for",
          "Asks the installed transformers itself, in the target interpreter: for sdpa, "
          "flash_attention_2, flash_attention_3, flash_attention_4 (where that release knows it) "
          "and the Hub kernels kernels-community/flash-attn2 and kernels-community/vllm-flash-attn3, "
          "it builds a tiny Llama model on the meta device with "
          "AutoModelForCausalLM.from_config(config, attn_implementation=NAME) - the decision code "
          "from_pretrained runs, by that release - and reports what the model got: the "
          "implementation asked for, a fallback (sdpa to eager; with the kernels library "
          "installed and the flash-attention package missing, flash_attention_2 loads a Hub "
          "kernel since transformers 4.56.0, flash_attention_3 since 4.57, flash_attention_4 in "
          "5.x: that downloads and runs code when the model loads), or the exception "
          "transformers raises, with its message. No network is used: fadoctor refuses every "
          "connection while transformers decides and records which Hub kernel it asked for. A "
          "flash_attention_N that fails while its flash-attention family is installed, or an "
          "sdpa that fails, is an error; a Hub download is a warning; a family not installed is "
          "information.",
          hf.check_transformers),
    Check("FAD130", "ext-libraries", "Every library each compiled extension needs will be found",
          "Reads DT_NEEDED, RPATH and RUNPATH of each flash-attention extension, every other one "
          "on sys.path that links torch, and any --extension, and resolves them as the dynamic "
          "loader will when the extension is imported after torch: what torch's own "
          "__init__.py loads (its global deps, the nvidia-* wheel libraries that release "
          "preloads, torch._C), LD_LIBRARY_PATH, RUNPATH, /etc/ld.so.cache, the default folders. "
          "The first library not found (breadth-first, as ld.so maps them) is the import's "
          "failure; libcudart.so.11.0 beside a CUDA 12 torch is a CUDA mismatch, libc10_cuda.so "
          "beside a CPU torch a CPU-only torch.",
          binary.check_libraries),
    Check("FAD131", "ext-symbols", "Each extension's symbols are exported by the torch installed",
          "Looks each undefined symbol of the extension up in the libraries it will load, through "
          "their hash tables, with symbol versions matched as ld.so does. Symbols that only follow "
          "from a missing library are its consequences, under its category. Missing c10/at/torch "
          "symbols mean a build for another torch; their "
          "std::string mangling ('Ss' or '__cxx11') against torch's C++ ABI tells an ABI "
          "mismatch. Names are shown demangled; a wheel's file name says which torch it was for.",
          binary.check_symbols),
    Check("FAD132", "ext-glibc", "The system's glibc and libstdc++ are new enough for each "
          "extension",
          "Holds the symbol versions an extension needs (GLIBC_x, GLIBCXX_x, CXXABI_x, from "
          ".gnu.version_r) against those the resolved libc and libstdc++ define.",
          binary.check_glibc),
    Check("FAD133", "ext-kernels", "Each extension has GPU kernels for the GPUs here",
          "Parses the CUDA fat binary (.nv_fatbin, compressed entries included) into SASS and "
          "PTX architectures and applies CUDA's rules: SASS runs on the same major with an equal "
          "or higher minor, PTX is JIT-compiled for equal or newer GPUs. Otherwise: 'no kernel "
          "image is available for execution on the device'.",
          binary.check_kernels),
    Check("FAD134", "static-vs-import", "The static prediction agrees with the real import",
          "Puts the prediction from the files next to what importing the extension in the "
          "worker did. A disagreement is a fadoctor bug, reported as such, never hidden.",
          binary.check_agreement),
    Check("FAD140", "kernel-smoke", "Each installed family and SDPA backend computes correct "
          "attention",
          "Runs each flash-attention family's functions (flash_attn_func, flash_attn_varlen_func, "
          "flash_attn_with_kvcache; FA3's and FA4's flash_attn_func) and PyTorch SDPA with each "
          "backend forced in turn, forward and backward, each in its own crash-isolated stage, and "
          "judges every output and gradient against an fp32 reference by flash-attention's own "
          "test rule: at most 2x (output) or 3x (gradients) the error of a PyTorch implementation "
          "in the same dtype, plus rounding; NaN/Inf always fails. An input a backend's own "
          "eligibility check refuses is not applicable, never a failure; a busy GPU is reported "
          "as gpu_busy. --kernels default runs one bf16 causal GQA head-dim-128 case per target, "
          "--kernels full the grid (bf16/fp16, causal or not, GQA or not, head dims 64/128/256, "
          "varlen and kv-cache).",
          kernels.check_smoke),
    Check("FAD141", "torch-compile", "torch.compile(fullgraph=True) compiles each attention path",
          "With check --compile: a small module calling each working family (and SDPA) is "
          "compiled with fullgraph=True and run forward and backward; torch._dynamo.explain "
          "counts the graph breaks and gives their reasons, and the registered torch.library "
          "custom ops are listed (flash-attn registers them from 2.7.0 on torch >= 2.4). Caches go "
          "to a temporary folder that is removed.",
          check_compile),
)

# Run only when a model is given (check --model): a report without one keeps its checks. Their
# `run` is bound to the model by model_checks().
MODEL_CHECKS: Tuple[Check, ...] = (
    Check("FAD150", "model-attention", "The model's attention needs are met here",
          "Reads the model's head dim, key/value heads, sliding window, logit softcapping and "
          "ALiBi from its config.json and holds them against each installed flash-attention "
          "family and PyTorch SDPA backend: the first release with each feature, head-dim limits "
          "and the backward head-dim limits some GPUs had. Recommends the attn_implementation.",
          lambda facts, matrix: Skip("needs a model (check --model CONFIG)")),
    Check("FAD151", "model-memory", "The training step fits in the GPU's memory",
          "Estimates weights, gradients, AdamW states, saved activations, the loss's fp32 "
          "logits and the CUDA context for the plan (full, LoRA or QLoRA; micro-batch, "
          "sequence, checkpointing) and holds the peak against the smallest GPU's memory.",
          lambda facts, matrix: Skip("needs a model (check --model CONFIG)")),
)


def model_checks(spec: ModelFacts) -> Tuple[Check, ...]:
    """MODEL_CHECKS run on `spec`."""
    runs = (model.check_model_attention, model.check_model_memory)
    return tuple(replace(c, run=functools.partial(run, model=spec))
                 for c, run in zip(MODEL_CHECKS, runs))

BY_KEY: Dict[str, Check] = {**{c.id: c for c in ALL_CHECKS + MODEL_CHECKS},
                            **{c.name: c for c in ALL_CHECKS + MODEL_CHECKS}}
