"""Which package a failing binary belongs to, read from its path and name, and two of the
loader's cases that name their own fix: a CUDA driver API function the driver lacks, the
owner's wheel of the other C++ ABI, and a package whose own parts were built with different C++
ABIs (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.observed import Stated
from fadoctor.triage.signal import NAMED, Signal, dedupe
from fadoctor.triage.text import Quote

ABI_WHEEL = re.compile(r"([A-Za-z0-9_.]+)-([\w.]+\+[\w.]*cxx11abi(?:TRUE|FALSE)[\w.-]*\.whl)")


def other_abi_wheel(ctx: Context, owner: str, want: int) -> Optional[Remedy]:
    """The owner's wheel the report names (mamba_ssm-1.0.1+cu118torch1.12cxx11abiTRUE-...whl),
    with the C++ ABI torch uses instead: the same build's other file."""
    dist = owner.replace("-", "_").lower()
    for _, found in ctx.find(ABI_WHEEL, ("cxx11abi",)):
        if found.group(1).lower() != dist:
            continue
        name = found.group(0)
        other = name.replace("cxx11abiTRUE", "cxx11abiFALSE") if not want else \
            name.replace("cxx11abiFALSE", "cxx11abiTRUE")
        if other != name:
            return Remedy(summary=f"Take the same release's wheel built with torch's C++ ABI: "
                          f"{other} (not {name}), from the same release page.")
    return None


# flash-attention's own compiled modules (2.x, 1.x, FA3, the csrc/ extensions)
FA_BINARIES = {"flash_attn_2_cuda", "flash_attn_cuda", "flash_attn_gpu", "flash_attn_3_cuda",
                "_C", "dropout_layer_norm", "rotary_emb", "fused_dense_lib", "xentropy_cuda_lib",
                "fused_softmax_lib", "layer_norm", "the extension"}


# Compiled modules of packages other than flash-attention, by the top-level name in the path.
OTHERS = {"vllm": "vllm", "xformers": "xformers", "torchvision": "torchvision",
           "torchaudio": "torchaudio", "torchtext": "torchtext", "apex": "apex",
           "deepspeed": "deepspeed",
           # ONNX Runtime's CUDA execution provider (the onnxruntime-gpu wheel's library)
           "libonnxruntime_providers_cuda": "onnxruntime-gpu",
           "bitsandbytes": "bitsandbytes", "causal_conv1d": "causal-conv1d",
           "mamba_ssm": "mamba-ssm", "transformer_engine": "transformer-engine",
           "transformer_engine_extensions": "transformer-engine",
           "selective_scan_cuda": "mamba-ssm", "causal_conv1d_cuda": "causal-conv1d",
           "fused_adam": "deepspeed", "flashinfer": "flashinfer-python", "sgl_kernel": "sgl-kernel",
           "common_ops": "sgl-kernel",
           # apex's top-level extensions (NVIDIA/apex setup.py: CppExtension/CUDAExtension names)
           **dict.fromkeys(("amp_C", "apex_C", "syncbn", "fused_layer_norm_cuda", "mlp_cuda",
                            "fused_dense_cuda", "scaled_masked_softmax_cuda",
                            "scaled_upper_triang_masked_softmax_cuda",
                            "fused_weight_gradient_mlp_cuda"), "apex"),
           # the CuTe DSL's MLIR bindings (nvidia-cutlass-dsl installs cutlass/_mlir)
           "_mlir": "nvidia-cutlass-dsl",
           # other compiled PyTorch extensions, by import name, whose index name is the same
           # project (not SageAttention or nunchaku: their index names hold other code)
           "torch_scatter": "torch-scatter", "torch_sparse": "torch-sparse",
           "torch_cluster": "torch-cluster", "pytorch3d": "pytorch3d", "exllamav2": "exllamav2",
           "tensorrt_llm": "tensorrt-llm", "fbgemm_gpu": "fbgemm-gpu", "torchrec": "torchrec",
           # Triton's compiler library (triton/_C/libtriton.so), by its file name: the bare word
           # "triton" names the language and torch.compile's backend far more often than a binary
           "libtriton": "triton"}


def owner_of(library: str, ctx: Optional[Context] = None, index: int = 0) -> Optional[str]:
    """The distribution a failing binary belongs to when it is not a flash-attention family
    (None: flash-attention's, or unknown). A compiled module installed at site-packages' top
    level, in no package directory (exllama_kernels.cpython-310-x86_64-linux-gnu.so, which
    auto-gptq installs), belongs to the distribution whose traceback frame imports it."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in library:
            top = library.split(marker, 1)[1].split("/", 1)[0]
            stem = top.split(".", 1)[0]
            if stem in OTHERS or stem in FA_BINARIES or stem == "torch" or stem.startswith("flash_attn"):
                return OTHERS.get(stem)
            if "." not in top:  # a package directory not listed: its index name is unknown
                return None
            if ctx is None:
                return None
            return frame_package(ctx, index, (stem, "torch", "importlib"))
    parts = library.split("/")
    # a source checkout (/workspace/vllm/vllm/_C.abi3.so): the nearest package directory above
    # the binary that names one, else the binary's own name
    stem = parts[-1].split(".", 1)[0]
    # a package's own library named bare ("libtorchaudio.so: undefined symbol"): lib<package>
    return next((OTHERS[p] for p in reversed(parts[:-1]) if p in OTHERS),
                OTHERS.get(stem) or (OTHERS.get(stem[3:]) if stem.startswith("lib") else None))


_PACKAGED_SO = re.compile(r"[/\\](?:site|dist)-packages[/\\][^\s'\"]{1,300}?\.(?:so|pyd)\b")


def owner_in_text(ctx: Context) -> Optional[str]:
    """The one package other than flash-attention whose compiled files the report's paths name
    (sgl_kernel/sm100/common_ops.abi3.so): the binary that failed to load, when no line says."""
    owners = {owner_of(m.group(0).replace("\\", "/")) for _, m in
              ctx.find(_PACKAGED_SO, ("site-packages", "dist-packages"))}
    owners.discard(None)
    return owners.pop() if len(owners) == 1 else None


def reinstall_owner(owner: str) -> Remedy:
    return Remedy(summary=f"The binary and the libraries it loads come from different builds of "
                  f"{owner} (or from another package installed over it, or an old release's "
                  f"broken wheel): upgrade {owner} to its newest release, reinstalled from one "
                  "source without pip's cache.",
                  commands=[command("pip", "install", "--force-reinstall", "--no-cache-dir",
                                    owner)] if owner in KNOWN else [])


def demangled(symbol: str) -> str:
    from fadoctor.probes.symbols import demangle

    return demangle([symbol])[symbol] if symbol.startswith("_Z") else symbol


def is_cuda_library(library: str) -> bool:
    base = library.rsplit("/", 1)[-1]
    return base.startswith(("libcu", "libnv", "libnccl", "libcudnn"))


def binary_name(library: str) -> str:
    base = library.rsplit("/", 1)[-1]
    return base.split(".")[0] if base else "the extension"


# The CUDA driver API (cuInit, cuGreenCtxCreate...): libcuda.so, which the NVIDIA driver installs,
# not the toolkit; its functions are versioned by the driver (cuda.h maps them to _v2/_v3 names)
DRIVER_API = re.compile(r"^cu[A-Z][A-Za-z]+(?:_v\d+)?$")


def driver_api(ctx: Context, library: str, symbol: str, quotes: List[Quote]) -> Signal:
    """A binary needs a CUDA driver API function the installed libcuda.so lacks: the NVIDIA
    driver is older than the CUDA the binary was built with."""
    cuda = ctx.torch_cuda
    toolkit = ctx.matrix.toolkit_driver(cuda) if cuda is not None else None
    need = f" {toolkit.min_driver} or newer (CUDA {cuda}'s own driver, the CUDA torch is built " \
        "with)" if toolkit else " one as new as the CUDA the binary was built with"
    return Signal(
        "undefined_symbol", Category.DRIVER_TOO_OLD,
        f"{binary_name(library)} calls the CUDA driver API function {symbol}, which the installed "
        "NVIDIA driver's libcuda.so does not have: the driver is older than the CUDA it was "
        "built with", dedupe([*quotes, *ctx.quotes("driver", "torch")]), NAMED,
        [Remedy(summary=f"Upgrade the NVIDIA driver to{need}."),
         Remedy(summary="Or install the package's build for an older CUDA (one this driver "
                "runs), with the torch of that CUDA.")],
        details={"library": library, "symbol": symbol},
        needs=[] if ctx.driver else [("the driver version", "nvidia-smi")])


def split_abi(owner: Optional[str], library: str, symbol: str, quotes: List[Quote]
              ) -> Optional[Signal]:
    """A package's own symbol (not torch's) carrying one C++ ABI's std::string that none of its
    libraries defines: the package's parts were built with different _GLIBCXX_USE_CXX11_ABI
    (its torch extension with torch's, its core library with the compiler's default)."""
    from fadoctor.probes.mangling import string_abi

    abi = string_abi(symbol)
    if abi is None:
        return None
    who = owner or binary_name(library)
    string = "std::__cxx11::basic_string (C++11 ABI)" if abi else \
        "the pre-C++11 std::string (Ss)"
    return Signal("split_abi", Category.CXX11_ABI_MISMATCH,
                  f"{binary_name(library)} needs {demangled(symbol)} with {string}, which no "
                  f"library it loads defines: {who}'s parts were built with different "
                  "C++ ABIs", quotes, NAMED,
                  [Remedy(summary=f"Rebuild {who} so that every part of it uses torch's "
                          "_GLIBCXX_USE_CXX11_ABI (print it with the command below; a build "
                          "that compiles its core library apart from its torch extension must "
                          "pass the same flag to both), or install a release of it whose parts "
                          "agree.",
                          commands=["python -c 'import torch; "
                                    "print(torch._C._GLIBCXX_USE_CXX11_ABI)'"])],
                  details={"symbol": symbol, "extension_cxx11_abi": abi})


def installed_wheel(ctx: Context) -> Optional[Stated]:
    """The flash-attention wheel the report names as installed (none where pip rejected one)."""
    rejected = ctx.has("not a supported wheel")
    for wheel in ctx.seen.wheels:
        if wheel.value.startswith(("flash_attn", "vllm_flash_attn")) and rejected is None:
            return wheel
    return None


# Import names of packages that ship CUDA binaries, to their distributions (flash-attn first:
# it is what most of these reports are about).
_BINARIES = {"flash_attn": "flash-attn", "flash-attn": "flash-attn", **OTHERS,
             **{top.replace("_", "-"): dist for top, dist in OTHERS.items()}}
# the index names fadoctor knows for compiled packages (a pip command may name these)
KNOWN = frozenset(_BINARIES.values())
_NAMES = re.compile(r"(?<!\w)(?<!\w-)(" + "|".join(sorted(map(re.escape, _BINARIES), key=len,
                                                      reverse=True)) + r")(?![\w-])", re.I)



# a CUDA error that names the kernel's source file in the tree its wheel was built from: the
# project folder above src/ or csrc/ (a "-dev"/"-main" checkout suffix dropped)
_KERNEL_SOURCE = re.compile(r"[\\/]([A-Za-z][\w.]{1,40}?)(?:-(?:dev|main|master))?[\\/]c?src[\\/]"
                            r"[^\s()]{1,200}\.cuh?:\d+")


def package_in(ctx: Context, line: str = "") -> Optional[str]:
    """The package that failed: the one `line` (the error) names, else the one whose compiled
    files the paths show, else the binary package the report names first (its title first)."""
    found = _NAMES.search(line)
    if found:
        return _BINARIES[found.group(1).lower()]
    source = _KERNEL_SOURCE.search(line)  # "(at D:\\Project\\nunchaku-dev\\src\\kernels\\x.cu:313)"
    if source:
        return source.group(1).lower()
    owner = owner_in_text(ctx)
    if owner is not None:
        return owner
    for text in ctx.text.lines:
        found = _NAMES.search(text)
        if found:
            return _BINARIES[found.group(1).lower()]
    return None


# an import statement, as a traceback shows it (Jupyter's "---> 81" and line numbers before it)
_IMPORTS = re.compile(r"^\s*(?:-*>\s*)?(?:\d+\s+)?(?:from|import)\s+([A-Za-z_]\w*)")


def other_named(ctx: Context, index: int) -> Optional[str]:
    """The binary package imported within 15 lines of a loader's error, in a report that never
    names flash-attention (`from vllm import LLM` around libcudart.so.12 missing is vLLM's wheel,
    not flash-attn's; a launcher such as deepspeed merely named is not)."""
    if ctx.text.containing(("flash_attn", "flash-attn", "flash attn", "flash-attention")):
        return None
    for anchor in [index, *ctx.text.containing(("cannot open shared object",))]:  # each retelling
        for line in ctx.text.lines[max(0, anchor - 15):anchor + 15]:
            found = _IMPORTS.match(line)
            if found is not None and found.group(1) in OTHERS:
                return OTHERS[found.group(1)]
    return None


# torch's own library (torch/lib/libcaffe2.so, libtorch_cpu.so) missing a c10/ATen/torch symbol
# (_ZN3c10..., _ZTIN3c10...: Itanium mangling of namespaces c10, at, torch)
TORCH_OWN = re.compile(r"torch[\\/]lib[\\/]lib\w+\.so")
# torch's own libraries by name (libtorch.so, libtorch_cuda.so, libc10_cuda.so ...), not another
# package's that starts alike (torch-ccl's libtorch_ccl.so)
TORCH_LIB = re.compile(r"\blib(?:torch(?:_cpu|_cuda\w*|_python|_global_deps|_hip)?|c10(?:_cuda|_hip)?)"
                       r"\.so\b")
TORCH_SYMBOL = re.compile(r"_Z(?:TI|TV|TS)?N?K?(?:3c10|2at|5torch)")


def two_torches(library: str, symbol: str, quotes: List[Quote]) -> Signal:
    """torch's own libraries disagree: the libc10 / libtorch the loader found is another torch
    build's (a second install in the user site, a source build's libraries in /usr/local/lib or
    on LD_LIBRARY_PATH), not the one beside this torch."""
    return Signal(
        "undefined_symbol", Category.TORCH_VERSION_MISMATCH,
        f"torch's own {binary_name(library)} needs {demangled(symbol)}, which the torch libraries "
        "the loader found do not export: they belong to another torch build (a second install, "
        "or a source build's libc10/libtorch left in /usr/local/lib or on LD_LIBRARY_PATH)",
        quotes, NAMED,
        [Remedy(summary="Remove every other torch: uninstall it until pip finds none (the user "
                "site ~/.local included), delete stale libc10/libtorch libraries a source build "
                "left (`ldconfig -p` lists the ones the loader finds), then install the torch "
                "build you use once (its version and CUDA build, from the PyTorch index).",
                commands=["pip uninstall -y torch", "pip uninstall -y torch"])],
        details={"library": library, "symbol": symbol})
