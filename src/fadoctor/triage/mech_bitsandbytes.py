"""bitsandbytes without a binary for torch's CUDA: it looks for libbitsandbytes_cuda<XY> next to
its package and, not finding it, loads its CPU-only library ("Could not find the bitsandbytes
CUDA binary at ...libbitsandbytes_cuda128.so", then "compiled without GPU support";
bitsandbytes-foundation/bitsandbytes@1341fb44:bitsandbytes/cextension.py, get_native_library):
the installed release ships no binary for that CUDA (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, NAMED, Signal, dedupe

SOURCE = "bitsandbytes-foundation/bitsandbytes@1341fb44:bitsandbytes/cextension.py"
# 0.46's wording raises instead (bitsandbytes/cextension.py, get_native_library: "Configured CUDA
# binary not found at {cuda_binary_path}")
# and up to 0.41 (bitsandbytes/cuda_setup/main.py): "CUDA SETUP: Required library version not
# found: libbitsandbytes_cuda122.so. Maybe you need to compile it from source?"
_NO_BINARY = re.compile(r"(?:(?:Could not find the bitsandbytes CUDA binary|Configured CUDA binary "
                        r"not found) at [^\n]{0,400}?|Required library version not found: )"
                        r"libbitsandbytes_cuda(\d{2,3})\w*\.(?:so|dll)")


def no_cuda_binary(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_BINARY, ("bitsandbytes cuda binary", "configured cuda binary",
                                 "required library version not found"))
    if hit is None:
        return []
    digits = hit[1].group(1)  # 128: CUDA 12.8, 118: 11.8
    cuda = f"{digits[:-1]}.{digits[-1]}"
    return [Signal("bitsandbytes_binary", Category.WRONG_WHEEL,
                   f"the installed bitsandbytes ships no binary for CUDA {cuda} (torch's CUDA), so "
                   "it loaded its CPU-only library: 8-bit and 4-bit GPU kernels are unavailable",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), LOGGED,
                   [Remedy(summary=f"Upgrade bitsandbytes to a release built for CUDA {cuda} (pip "
                           "takes the newest; older releases stop at older CUDA versions), or "
                           "build it from source for this CUDA.",
                           commands=["pip install --upgrade bitsandbytes"])],
                   details={"source": SOURCE})]


# transformers' quantized loading: "Using `load_in_8bit=True` requires Accelerate: `pip install
# accelerate` and the latest version of bitsandbytes ..." (transformers==4.36.0:
# transformers/modeling_utils.py:2900) is raised when is_bitsandbytes_available() is False, and
# that is False without a CUDA device even where bitsandbytes is installed
# (transformers==4.36.0:transformers/utils/import_utils.py:614, "_bitsandbytes_available and
# torch.cuda.is_available()").
# From 4.38 the quantizers say it ("Using `bitsandbytes` 8-bit quantization requires Accelerate",
# transformers==4.38.0:transformers/quantizers/quantizer_bnb_8bit.py:63, the same two checks).
_HF_QUANT = re.compile(r"Using `?load_in_(?:8|4)bit=True`? requires Accelerate|"
                       r"Using `?bitsandbytes`? (?:8|4)-bit quantization requires Accelerate")
_NO_CUDA = re.compile(r"device_map\s*=\s*['\"]cpu['\"]|\bcpu[- ]only\b|\bno (?:cuda|gpu)\b|"
                      r"\bwithout (?:a )?(?:cuda|gpu)\b|is_available\(\)\s*(?:->|=|:)?\s*False|"
                      r"\bCPU runtime\b|\bGPU\?\)?:\s*[\d.+\w]*\s*\(False\)", re.I)
_INSTALLED = re.compile(r"(?:already|were|are|is) installed|latest versions? (?:were|was|are|is)",
                        re.I)
# the same message retold: "an error stating that bitsandbytes and accelerate are required"
_TOLD = re.compile(r"(?=[^\n]*\bbitsandbytes\b)(?=[^\n]*\baccelerate\b)[^\n]*\brequire[sd]?\b", re.I)
HF_QUANT_SOURCE = ("transformers==4.36.0:transformers/modeling_utils.py:2900; "
                   "transformers==4.36.0:transformers/utils/import_utils.py:614")


def hf_quantized_without_cuda(ctx: Context) -> List[Signal]:
    hit = ctx.first(_HF_QUANT, ("requires accelerate",)) or ctx.first(_TOLD, ("requir",))
    if hit is None or (hit[1].re is _TOLD and not ctx.text.containing(("load_in_", "bitsandbytesconfig"))):
        return []
    cpu = ctx.first(_NO_CUDA, ("cpu", "cuda", "gpu", "false"))
    installed = ctx.first(_INSTALLED, ("installed", "latest version"))
    mac = ctx.first(_MACOS, _MAC_NEEDLES)
    if mac is not None:  # a Mac: no CUDA device, whatever is installed
        return [Signal("hf_quantization", Category.PLATFORM_UNSUPPORTED,
                       "transformers counts bitsandbytes as unavailable on this Mac: its 8-bit and "
                       "4-bit loading needs a CUDA GPU, and Apple Silicon has none (the message "
                       "about installing accelerate and bitsandbytes misleads)",
                       dedupe([ctx.quote(hit[0]), ctx.quote(mac[0])]), LOGGED, [_MAC_FIX],
                       details={"source": HF_QUANT_SOURCE})]
    gpu_fix = Remedy(summary="bitsandbytes' 8-bit and 4-bit loading needs a CUDA GPU: transformers "
                     "counts bitsandbytes as unavailable without one, so this message appears even "
                     "with both packages installed. Run on a GPU (in Colab, a GPU runtime), and "
                     "load on it (device_map=\"auto\" or \"cuda\", not \"cpu\").")
    install = Remedy(summary="Otherwise install both into the Python that runs it.",
                     commands=["pip install --upgrade accelerate bitsandbytes"])
    if cpu is None and installed is None:
        return [Signal("hf_quantization", Category.NOT_INSTALLED,
                       "transformers cannot use bitsandbytes for 8-bit/4-bit loading: accelerate "
                       "or bitsandbytes is missing, or there is no CUDA device",
                       [ctx.quote(hit[0])], LOGGED, [install, gpu_fix],
                       details={"source": HF_QUANT_SOURCE})]
    return [Signal("hf_quantization", Category.PLATFORM_UNSUPPORTED,
                   "transformers counts bitsandbytes as unavailable because no CUDA device is "
                   "visible (bitsandbytes' quantization is CUDA-only): the message about installing "
                   "accelerate and bitsandbytes misleads",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(cpu[0])] if cpu else []),
                           *([ctx.quote(installed[0])] if installed else [])]), LOGGED,
                   [gpu_fix, install], details={"source": HF_QUANT_SOURCE})]


# a bitsandbytes layer missing an attribute its caller (PEFT, transformers) reads: the caller was
# written for a newer bitsandbytes (bitsandbytes/nn/modules.py defines these classes)
_BNB_ATTR = re.compile(r"'(Linear4bit|Linear8bitLt|Params4bit|Int8Params|LinearFP4|LinearNF4|"
                       r"Embedding4bit|Embedding8bit|QuantState)' object has no attribute "
                       r"'(\w{1,60})'")


def old_layer(ctx: Context) -> List[Signal]:
    hit = ctx.first(_BNB_ATTR, ("object has no attribute",))
    if hit is None:
        return []
    cls, attr = hit[1].group(1), hit[1].group(2)
    stated = ctx.package("bitsandbytes")
    return [Signal("bitsandbytes_api", Category.VERSION_CONFLICT,
                   f"bitsandbytes' {cls} has no {attr} in the installed release"
                   + (f" ({stated.value})" if stated else "") + ": the code calling it (PEFT, "
                   "transformers) was written for a newer bitsandbytes",
                   dedupe([ctx.quote(hit[0]), *([stated.quote] if stated else [])]), LOGGED,
                   [Remedy(summary="Upgrade bitsandbytes to the release the caller expects (the "
                           "newest, unless the caller pins one).",
                           commands=["pip install --upgrade bitsandbytes"])])]


# bitsandbytes' own CUDA setup (0.3x-0.42: "CUDA SETUP: ...", "compiled without GPU support",
# libbitsandbytes_cpu.so) on a platform its binaries did not cover: before 0.43.0 it shipped
# Linux libraries only and searched for libcudart.so, on Windows too (bitsandbytes release notes,
# 0.43.0: official Windows support); on macOS it has no CUDA GPU to use at all, so it falls back to
# its CPU library.
_SETUP = re.compile(r"CUDA SETUP:|CUDA_SETUP:|CUDA Setup failed|compiled without GPU support|"
                    r"libbitsandbytes_cpu\.(?:so|dylib)", re.I)
_OLD_SETUP = re.compile(r"CUDA SETUP:|CUDA_SETUP:|CUDA Setup failed", re.I)
_WINDOWS_SETUP = re.compile(r"WindowsPath\(|[A-Za-z]:\\[^\n]{0,200}bitsandbytes", re.I)
_MACOS = re.compile(r"/Users/\w|\bdlopen\(|\bmacOS\b|\bMac ?OS\b|\bApple (?:Silicon|M[1-4])\b|"
                    r"\bM[1-4] (?:Max|Pro|Ultra|chip)\b|\bdarwin\b|(?<![A-Za-z0-9])M[1-5] ?芯片", re.I)
_MAC_NEEDLES = ("/users/", "dlopen", "mac", "apple", " m1", " m2", " m3", " m4", "darwin", "芯片")
_MAC_FIX = Remedy(summary="On Apple Silicon, load the model without bitsandbytes quantization (no "
                  "load_in_8bit/load_in_4bit, not a bitsandbytes int4/int8 checkpoint; fp16 or "
                  "bf16 on the mps device: without quantization), or use a Mac-native quantized "
                  "format (GGUF with llama.cpp, MLX); bitsandbytes' GPU quantization needs a CUDA "
                  "machine.")


def setup_platform(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SETUP, ("cuda setup", "cuda_setup", "without gpu support",
                             "libbitsandbytes_cpu"))
    if hit is None or not ctx.text.containing(("bitsandbytes",)):
        return []
    mac = ctx.first(_MACOS, _MAC_NEEDLES)
    if mac is not None:
        return [Signal("bitsandbytes_platform", Category.PLATFORM_UNSUPPORTED,
                       "bitsandbytes' 8-bit and 4-bit kernels need a CUDA GPU, and this is a Mac "
                       "(Apple Silicon has none): it loads its CPU-only library",
                       dedupe([ctx.quote(hit[0]), ctx.quote(mac[0])]), LOGGED, [_MAC_FIX])]
    win = ctx.first(_WINDOWS_SETUP, ("windowspath(", ":\\"))
    # the old setup's own lines (0.43.0 and later ship libbitsandbytes_cudaXYZ.dll and say
    # "Could not find the bitsandbytes CUDA binary" instead: no_cuda_binary's)
    old = ctx.first(_OLD_SETUP, ("cuda setup", "cuda_setup"))
    dll = any(".dll" in ctx.low(i) for i in ctx.text.containing(("libbitsandbytes_cuda",)))
    if win is None or old is None or dll:
        return []
    return [Signal("bitsandbytes_platform", Category.PLATFORM_UNSUPPORTED,
                   "this bitsandbytes predates its Windows support (0.43.0): its CUDA setup "
                   "looks for Linux libraries (libcudart.so) and finds none on Windows",
                   dedupe([ctx.quote(old[0]), ctx.quote(win[0])]), LOGGED,
                   [Remedy(summary="Upgrade bitsandbytes to 0.43.0 or later, the first release with "
                           "official Windows wheels.",
                           commands=['pip install --upgrade "bitsandbytes>=0.43.0"'])],
                   details={"source": "bitsandbytes 0.43.0 release notes (official Windows support)"})]


# transformers refusing bitsandbytes quantization with no CUDA device: "No GPU found. A GPU is
# needed for quantization." (its bitsandbytes quantizers' validate_environment, earlier
# modeling_utils), on a Mac most often: bitsandbytes' kernels are CUDA's.
_NO_GPU_QUANT = re.compile(r"No GPU found\. A GPU is needed for quantization")


def no_gpu_quantization(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_GPU_QUANT, ("gpu is needed for quantization",))
    if hit is None:
        return []
    mac = ctx.first(_MACOS, _MAC_NEEDLES)
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.quote(mac[0])] if mac else [])])
    if mac is not None:
        return [Signal("bnb_no_gpu", Category.PLATFORM_UNSUPPORTED,
                       "transformers' bitsandbytes quantization (BitsAndBytesConfig, load_in_4bit/"
                       "8bit) needs a CUDA GPU, and a Mac has none", quotes, NAMED, [_MAC_FIX])]
    return [Signal("bnb_no_gpu", Category.NO_GPU,
                   "transformers' bitsandbytes quantization needs a CUDA GPU, and torch sees none "
                   "here", quotes, NAMED,
                   [Remedy(summary="Run it where torch sees a CUDA GPU (check "
                           "torch.cuda.is_available(): a CPU-only torch, or a missing driver, "
                           "hides it), or load the model without quantization.",
                           commands=['python -c "import torch; print(torch.cuda.is_available())"'])])]
