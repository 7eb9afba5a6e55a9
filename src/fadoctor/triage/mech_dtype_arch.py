"""A number format the GPU's arch has no instructions for, said by the compiler or the kernel
dispatch rather than by a dtype check: ptxas refusing bf16 PTX below sm_80, Triton refusing
float8_e4m3fn (its fp8e4nv) below sm_89, and PyTorch's memory-efficient (cutlass) attention finding
no bf16 kernel on a pre-Ampere GPU. The way out is the format the GPU has (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.install.torch import extra_index_args
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, IMPLIED, NAMED, Signal, dedupe

# ptxas' own words: "error   : Feature '.bf16' requires .target sm_80 or higher" (also "cvt with
# .f32.bf16", "cvt.e4m3x2" for fp8 below sm_89): PTX ISA, each instruction's Target ISA notes.
_FEATURE = re.compile(r"Feature '([^']{1,60})' requires \.target (sm_\d{2,3})")
# Triton's semantic check: ValueError("type fp8e4nv not supported in this architecture. The
# supported fp8 dtypes are (...)"); the CUDA backend supports fp8e5 and fp8e4b15 everywhere and adds
# fp8e4nv (torch.float8_e4m3fn) from capability 89: triton-lang/triton@00526b7:
# third_party/nvidia/backend/compiler.py (CUDAOptions.supported_fp8_dtypes, parse_options).
# Before it, python/triton/language/semantic.py asserted "fp8e4nv data type is not supported on
# CUDA arch < 89" (builder.options.allow_fp8e4nv): the same floor, in older releases' words.
_TRITON_FP8 = re.compile(r"type (fp8\w{1,8}) not supported in this architecture|"
                         r"(fp8\w{1,8}) data type is not supported on CUDA arch < 89")
# PyTorch's (and xFormers') memory-efficient attention dispatch has bf16 kernels only from sm80:
# pytorch/pytorch aten/src/ATen/native/transformers/cuda/mem_eff_attention/kernels/cutlassF.h
# (dispatch_cutlassF: bfloat16_t && 80 <= cc; half_t and float from 50).
_CUTLASS = re.compile(r"cutlass[FB]: no kernel found to launch")
_FP8_SOURCE = "triton-lang/triton@00526b7:third_party/nvidia/backend/compiler.py"
_TO_FP16 = ("Run in float16 instead: load the model with torch_dtype=torch.float16 (or "
            "bf16=False, fp16=True in the trainer's arguments), and ask "
            "torch.cuda.get_device_capability() >= (8, 0) rather than torch.cuda.is_bf16_supported(), "
            "whose default (including_emulation=True) answers True where bf16 is only emulated.")


def _gpu(ctx: Context) -> str:
    return f"{ctx.gpu[0]} (sm_{ctx.gpu[1].major}{ctx.gpu[1].minor})" if ctx.gpu and ctx.gpu[1] \
        else "this GPU"


def ptxas_feature(ctx: Context) -> List[Signal]:
    """ptxas was asked for a feature above the GPU's target: a kernel compiled for this GPU uses
    a number format (bf16, fp8) or instruction its arch lacks."""
    hit = ctx.first(_FEATURE, ("requires .target",))
    if hit is None:
        return []
    feature, floor = hit[1].group(1), hit[1].group(2)
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    if "bf16" in feature:
        return [Signal("ptxas_feature", Category.DTYPE_UNSUPPORTED,
                       f"a kernel was compiled in bfloat16 for a GPU below {floor}: ptxas refuses "
                       f"'{feature}' there, as bf16 arithmetic needs Ampere (sm_80) or newer",
                       quotes, NAMED, [Remedy(summary=_TO_FP16)],
                       details={"source": "PTX ISA, Target ISA notes (bf16: sm_80)"})]
    if "e4m3" in feature or "e5m2" in feature:
        return [Signal("ptxas_feature", Category.DTYPE_UNSUPPORTED,
                       f"a kernel uses fp8 ('{feature}'), which needs {floor} or newer; "
                       f"{_gpu(ctx)} is older", quotes, NAMED,
                       [Remedy(summary="Run the model in bf16/fp16 on this GPU (an fp8 checkpoint "
                               "dequantized, or its bf16 release), or use a GPU of at least "
                               f"{floor}.")],
                       details={"source": "PTX ISA, Target ISA notes"})]
    return [Signal("ptxas_feature", Category.GPU_UNSUPPORTED,
                   f"a kernel uses '{feature}', which needs {floor} or newer; {_gpu(ctx)} is "
                   "older", quotes, NAMED,
                   [Remedy(summary=f"Use a GPU of {floor} or newer for this kernel, or the "
                           "library's path for older GPUs (PyTorch SDPA for attention).")],
                   details={"source": "PTX ISA, Target ISA notes"})]


def triton_fp8(ctx: Context) -> List[Signal]:
    """Triton has no float8_e4m3fn below sm_89 (A100, RTX 30xx): torch.compile or a Triton kernel
    lowering an e4m3fn tensor there stops at this check."""
    hit = ctx.first(_TRITON_FP8, ("not supported in this architecture", "cuda arch < 89"))
    if hit is None:
        return []
    kind = hit[1].group(1) or hit[1].group(2)
    amd = ctx.amd or "('fp8e5',)" in ctx.text.lines[hit[0]]
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    torch_name = {"fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2",
                  "fp8e4b8": "float8_e4m3fnuz", "fp8e5b16": "float8_e5m2fnuz"}.get(kind, kind)
    where = "this AMD GPU" if amd else \
        f"{_gpu(ctx)}: Triton supports it on NVIDIA GPUs from sm_89 (Ada, Hopper, Blackwell)"
    return [Signal("triton_fp8", Category.DTYPE_UNSUPPORTED,
                   f"Triton cannot compile {kind} (torch.{torch_name}) for {where}", quotes, NAMED,
                   [Remedy(summary=f"Give the compiled code float8_e5m2 (fp8e5) weights, which "
                           "Triton compiles on every GPU, or run without torch.compile / the "
                           f"Triton kernel on this GPU, or dequantize to bf16/fp16; {kind} "
                           "itself needs an sm_89-or-newer GPU.")],
                   details={"source": _FP8_SOURCE})]


def cutlass_bf16(ctx: Context) -> List[Signal]:
    """The memory-efficient attention dispatch found no kernel, on a GPU below sm_80: its only
    missing kernels there are bf16 ones, so the tensors were bfloat16."""
    hit = ctx.first(_CUTLASS, ("no kernel found to launch",))
    cc: Optional[Version] = ctx.gpu_cc_exact
    if hit is None or (cc is not None and cc >= Version("8.0")) or ctx.amd:
        return []
    if cc is None:  # no GPU named: the one case without a kernel on any sm_50+ GPU, said as such
        return [Signal("cutlass_bf16", Category.DTYPE_UNSUPPORTED,
                       "the memory-efficient attention kernels found none for these tensors on "
                       "this GPU: their only gap from sm_50 on is bfloat16 below sm_80 (Pascal, "
                       "Volta, Turing), so the model most likely ran in bfloat16 on such a GPU",
                       [ctx.quote(hit[0])], IMPLIED, [Remedy(summary=_TO_FP16)],
                       details={"source": "pytorch/pytorch aten/src/ATen/native/transformers/"
                                          "cuda/mem_eff_attention/kernels/cutlassF.h"},
                       needs=[("the GPU's name and compute capability",
                               "nvidia-smi --query-gpu=name,compute_cap --format=csv")])]
    return [Signal("cutlass_bf16", Category.DTYPE_UNSUPPORTED,
                   f"the memory-efficient attention kernels have no bfloat16 version for "
                   f"{_gpu(ctx)} (bf16 ones start at sm_80; fp16 and fp32 run from sm_50), so the "
                   "model ran in bfloat16 on a GPU without it",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary=_TO_FP16)],
                   details={"source": "pytorch/pytorch aten/src/ATen/native/transformers/cuda/"
                                      "mem_eff_attention/kernels/cutlassF.h (dispatch_cutlassF)"})]


# PyTorch's FP8 matmul (aten/src/ATen/native/cuda/Blas.cpp, _scaled_mm_out_cuda: TORCH_CHECK(
# allowed_device, "torch._scaled_mm is only supported on CUDA devices with compute capability >=
# 9.0 or 8.9, or ROCm MI300+")). Through torch 2.2 the check was `dprops->major >= 9` and said
# "...only supported on devices with compute capability >= 9.0": sm_89 (Ada) was admitted in
# torch 2.3.0 (pytorch/pytorch#118703, 2024-01-31, answered by the maintainer: "PR should land in
# nightly by tomorrow", after 2.2.0's branch cut).
_SCALED_MM = re.compile(r"_scaled_mm is only supported on (?:CUDA )?devices with compute capability")
_SCALED_MM_OLD = re.compile(r"_scaled_mm is only supported on devices with compute capability "
                            r">= ?9\.0(?! or)")
_SCALED_MM_ADA = "2.3.0"
_SCALED_MM_SOURCE = {"source": "pytorch/pytorch aten/src/ATen/native/cuda/Blas.cpp "
                               "(_scaled_mm_out_cuda: _scaled_mm_allowed_device); sm_89 from "
                               "torch 2.3.0: pytorch/pytorch#118703"}


def fp8_matmul(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SCALED_MM, ("_scaled_mm is only supported",))
    if hit is None:
        return []
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    cc = ctx.gpu_cc
    older = _SCALED_MM_OLD.search(ctx.text.lines[hit[0]]) is not None
    upgrade = Remedy(summary=f"Upgrade torch to {_SCALED_MM_ADA} or newer: from that release "
                     "torch._scaled_mm runs on sm_89 (Ada: RTX 40, L4, L40) as well as sm_90+.",
                     commands=[command("pip", "install", f"torch>={_SCALED_MM_ADA}",
                                       *extra_index_args(str(ctx.torch or "")))])
    if older and (cc is None or cc >= Version("8.9")):
        ada = cc is not None and cc < Version("9.0")
        return [Signal("fp8_matmul_ada", Category.VERSION_CONFLICT,
                       f"this torch is older than {_SCALED_MM_ADA}: its torch._scaled_mm (the FP8 "
                       "matmul) still refused every GPU below sm_90, "
                       + (f"{_gpu(ctx)} included, which" if ada else "while sm_89 (Ada) GPUs")
                       + f" torch {_SCALED_MM_ADA} and newer run it on", quotes, NAMED,
                       [upgrade, Remedy(summary=_FP8_OFF)], details=_SCALED_MM_SOURCE)]
    return [Signal("fp8_matmul", Category.DTYPE_UNSUPPORTED,
                   f"an FP8 matmul (torch._scaled_mm) runs only on sm_89 and newer (Ada, Hopper, "
                   f"Blackwell; ROCm MI300+); {_gpu(ctx)} has no FP8 tensor cores",
                   quotes, NAMED, [Remedy(summary=_FP8_OFF + "; or use an sm_89+ GPU.")],
                   details=_SCALED_MM_SOURCE)]


_FP8_OFF = ("Turn the FP8 compute path off (a node's \"fp8 fast mode\" / fp8_fast, ComfyUI's "
            "--fast, vLLM's --quantization fp8, torchao's float8 training): fp8 weights can still "
            "be stored and upcast to bf16/fp16 for the matmul (fp8_e4m3fn weights without the "
            "fast mode)")


# transformers' TrainingArguments (src/transformers/training_args.py, 4.45.0: raised when
# torch.cuda.is_available() and not is_torch_bf16_gpu_available()): "Your setup doesn't support
# bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0"
_HF_BF16 = re.compile(r"Your setup doesn't support bf16/gpu")


def trainer_bf16(ctx: Context) -> List[Signal]:
    hit = ctx.first(_HF_BF16, ("support bf16/gpu",))
    if hit is None:
        return []
    return [Signal("trainer_bf16", Category.DTYPE_UNSUPPORTED,
                   f"transformers' Trainer was asked for bf16 on a GPU without it ({_gpu(ctx)}): "
                   "it checks for CUDA with bf16, which needs Ampere (sm_80) or newer",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary="Train in fp16 on this GPU: --bf16 False --fp16 True (in "
                           "TrainingArguments / SFTConfig: bf16=False, fp16=True), and load the "
                           "model in torch.float16 rather than bfloat16.")],
                   details={"source": "huggingface/transformers src/transformers/training_args.py "
                                      "(TrainingArguments.__post_init__, 4.45.0)"})]



# torch.compile's inductor refuses a graph with bf16 inputs or outputs on a GPU whose Triton has
# no bf16 (torch/_inductor/compile_fx.py, _check_triton_bf16_support: warnings.warn(f"{name} does
# not support bfloat16 compilation natively, skipping"), then SkipFrame: the frame runs eager).
_INDUCTOR_BF16 = re.compile(r"does not support bfloat16 compilation natively")


def inductor_bf16(ctx: Context) -> List[Signal]:
    hit = ctx.first(_INDUCTOR_BF16, ("bfloat16 compilation",))
    if hit is None:
        return []
    return [Signal("inductor_bf16", Category.DTYPE_UNSUPPORTED,
                   f"torch.compile skips every graph in bfloat16 on {_gpu(ctx)}: the GPU has no "
                   "bf16 (before sm_80), so inductor's Triton kernels cannot be made for it and "
                   "those frames run uncompiled",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary="Run the model in float16 (a fp16 checkpoint or torch_dtype="
                           "torch.float16) so the graphs compile, or run without compilation "
                           "(drop torch.compile / the app's compile option): bf16 on this GPU is "
                           "emulated and slow either way.")],
                   details={"source": "pytorch/pytorch torch/_inductor/compile_fx.py "
                                      "(_check_triton_bf16_support)"})]


# torch's autocast refuses bf16 where torch.cuda.is_bf16_supported() says no (torch==2.13.0:
# torch/amp/autocast_mode.py:295, raise RuntimeError("Current CUDA Device does not support
# bfloat16. Please switch dtype to float16.")): before sm_80 on releases without emulation, and
# where even a bf16 tensor cannot be made on the GPU.
_AUTOCAST_BF16 = re.compile(r"Current CUDA Device does not support bfloat16")


def autocast_bf16(ctx: Context) -> List[Signal]:
    hit = ctx.first(_AUTOCAST_BF16, ("support bfloat16",))
    if hit is None:
        return []
    return [Signal("autocast_bf16", Category.DTYPE_UNSUPPORTED,
                   f"torch's autocast was asked for bfloat16 on {_gpu(ctx)}, which it says has no "
                   "bf16 (Ampere, sm_80, and newer have it)",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary="Autocast in float16 on this GPU: torch.autocast('cuda', "
                           "dtype=torch.float16) with a GradScaler; in a framework, its fp16 "
                           "precision (Lightning precision='16-mixed' or '16-true', accelerate "
                           "--mixed_precision fp16, Trainer fp16=True).")],
                   details={"source": "torch==2.13.0:torch/amp/autocast_mode.py:295 "
                                      "(autocast.__init__)"})]


# Any library's words for refusing bfloat16 ("bf16 mixed precision requires PyTorch >= 1.10 and a
# supported device" in accelerate, "does not support bf16", "bfloat16 is not supported", a
# person's "my V100 does not support the bf16 mode", "V100 cannot perform full fine-tuning of BF16
# models", "此显卡不支持 bfloat16"): with a GPU below Ampere named, the GPU is
# why. bf16 arithmetic needs sm_80 (PTX ISA, Target ISA notes).
_BF16 = r"(?:bf16|bfloat16|bf-16)"
_REFUSED = re.compile(
    rf"\b{_BF16}\b[^\n]{{0,80}}?\b(?:requires?|not supported|unsupported|isn't supported|is not "
    rf"available|only supported|needs)\b|\b(?:does not|doesn't|do not|don't|cannot|can't|no)\s+"
    rf"(?:support|supports|run|use|perform|train|handle)\b[^\n]{{0,40}}?\b{_BF16}\b|"
    rf"不支持\s*{_BF16}", re.I)  # Chinese "does not support"


def bf16_below_ampere(ctx: Context) -> List[Signal]:
    cc = ctx.gpu_cc
    if cc is None or cc >= Version("8.0") or ctx.amd or ctx.gpu is None:
        return []
    hit = ctx.first(_REFUSED, ("bf16", "bfloat16", "bf-16"))
    if hit is None:
        return []
    line = ctx.text.lines[hit[0]]
    error = re.search(r"\w*Error\b|\berror:", line) is not None
    return [Signal("bf16_below_ampere", Category.DTYPE_UNSUPPORTED,
                   f"bfloat16 was asked for on {_gpu(ctx)}, which has no bf16 arithmetic (Ampere, "
                   "sm_80, and newer have it)",
                   dedupe(sorted([ctx.quote(hit[0]), ctx.gpu[2]], key=lambda q: q.line)),
                   NAMED - 5 if error else HINTED - 2,  # prose: below any other account
                   [Remedy(summary="Use float16 on this GPU: mixed_precision=\"fp16\" in "
                           "accelerate (accelerate launch --mixed_precision fp16), fp16=True and "
                           "bf16=False in a Trainer, precision='16-mixed' in Lightning, and "
                           "torch_dtype=torch.float16 for the model; keep bf16 for an A100 or "
                           "another Ampere or newer GPU.")],
                   details={"source": "PTX ISA, Target ISA notes (bf16 arithmetic: sm_80)"})]


# TensorRT's builder refusing FP8 layers on a GPU without FP8 tensor cores ("Networks with FP8
# precision require hardware with FP8 support.", TensorRT's standardEngineBuilder): FP8 math needs
# Ada (sm_89) or Hopper (sm_90) and newer (PTX ISA: the e4m3/e5m2 mma forms from sm_89).
_TRT_FP8 = re.compile(r"Networks with FP8 (?:precision|Q/DQ layers) require hardware with FP8 support")


def tensorrt_fp8(ctx: Context) -> List[Signal]:
    hit = ctx.first(_TRT_FP8, ("require hardware with fp8",))
    if hit is None:
        return []
    return [Signal("tensorrt_fp8", Category.GPU_UNSUPPORTED,
                   f"TensorRT was asked to build FP8 layers for {_gpu(ctx)}, which has no FP8 "
                   "tensor cores (Ada, sm_89, and Hopper, sm_90, and newer have them)",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary="Build the engine without FP8 on this GPU: fp16/bf16, or int8 "
                           "(SmoothQuant) / int4 weight-only quantization, which run on Ampere; "
                           "keep FP8 checkpoints for an Ada, Hopper or Blackwell GPU.")],
                   details={"source": "TensorRT builder (standardEngineBuilder); PTX ISA (fp8 "
                                      "mma: sm_89)"})]


# cuBLAS refusing a bfloat16 GEMM on a GPU older than Ampere: "CUBLAS_STATUS_NOT_SUPPORTED when
# calling `cublasGemmStridedBatchedEx(..., CUDA_R_16BF, ...)`" (torch passes the dtype as
# CUDA_R_16BF); bfloat16 units start at compute capability 8.0, and older GPUs' cuBLAS may have
# no bf16 path at all (a Maxwell M40)
_CUBLAS_BF16 = re.compile(r"CUBLAS_STATUS_NOT_SUPPORTED when calling `?cublas\w+\([^\n]{0,400}?"
                          r"CUDA_R_16BF")


def cublas_bf16(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUBLAS_BF16, ("cublas_status_not_supported",))
    cc = ctx.gpu_cc_exact
    if hit is None or (cc is not None and cc >= Version("8.0")):
        return []
    return [Signal("cublas_bf16", Category.DTYPE_UNSUPPORTED,
                   f"cuBLAS has no bfloat16 GEMM for {_gpu(ctx)}: bfloat16 needs compute "
                   "capability 8.0 (Ampere), and the model runs in bf16",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary="Run the model in float16 on this GPU (torch_dtype=torch.float16, "
                           "or the app's dtype / precision option set to fp16), or float32 where "
                           "fp16 overflows.")])]


# nvcc finding no atomicAdd for a half-precision pointer: CUDA defines the __half overload only
# for compute capability 7.x and up and the __nv_bfloat16 one for 8.x and up (CUDA C++
# Programming Guide, atomicAdd), so a kernel using it fails to compile for any older arch in the
# build's list ("no instance of overloaded function "atomicAdd" matches the argument list /
# argument types are: (__half *, __half)").
_ATOMIC = re.compile(r"no instance of overloaded function \"atomicAdd\" matches the argument list")
_ATOMIC_TYPES = re.compile(r"argument types are: \((__half|c10::Half|at::Half|__nv_bfloat16|"
                           r"c10::BFloat16|at::BFloat16)\s?\*")


def half_atomic(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ATOMIC, ("atomicadd",))
    if hit is None:
        return []
    types = ctx.first(_ATOMIC_TYPES, ("argument types",))
    bf16 = types is not None and "bfloat16" in types[1].group(1).lower()
    floor = "8.0" if bf16 else "7.0"
    kind = "__nv_bfloat16" if bf16 else "__half"
    gpu = ctx.gpu
    own = (f" {gpu[0]} is {gpu[1]}, so the kernel cannot be built for it as written."
           if gpu is not None and gpu[1] is not None and gpu[1] < Version(floor) else "")
    return [Signal("half_atomic", Category.GPU_UNSUPPORTED,
                   f"the kernel calls atomicAdd on {kind}, which CUDA provides only for compute "
                   f"capability {floor} and up: the build compiles it for an older arch",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(types[0])] if types else []),
                           *([gpu[2]] if gpu is not None and own else [])]), NAMED,
                   [Remedy(summary=f"On a GPU of compute capability {floor} or newer, build for "
                           "that arch only (TORCH_CUDA_ARCH_LIST set to the GPU's capability, as "
                           "torch.cuda.get_device_capability() gives it) so older archs are not "
                           f"compiled.{own} Below {floor}: a release of the package whose kernel "
                           f"falls back to a float atomicAdd under __CUDA_ARCH__ < "
                           f"{floor.replace('.', '')}0, or another GPU.")])]


# CUDA device functions that exist only from a compute capability on (CUDA C++ Programming Guide:
# "Nanosleep Function" and "Warp Match Functions", compute capability 7.x and higher; "Warp Reduce
# Functions", 8.x and higher): compiled for an older arch, nvcc says 'identifier "__nanosleep" is
# undefined'.
_INTRINSIC_FLOOR = {"__nanosleep": "7.0", "__match_any_sync": "7.0", "__match_all_sync": "7.0",
                    **{f"__reduce_{op}_sync": "8.0" for op in ("add", "min", "max", "and", "or",
                                                               "xor")}}
_INTRINSIC = re.compile(r"identifier \"(__nanosleep|__match_(?:any|all)_sync|"
                        r"__reduce_(?:add|min|max|and|or|xor)_sync)\" is undefined")


def arch_intrinsic(ctx: Context) -> List[Signal]:
    hit = ctx.first(_INTRINSIC, ("is undefined",))
    if hit is None:
        return []
    name = hit[1].group(1)
    floor = Version(_INTRINSIC_FLOOR[name])
    gpu = ctx.gpu
    older = gpu is not None and gpu[1] is not None and gpu[1] < floor
    quotes = dedupe([ctx.quote(hit[0]), *([gpu[2]] if gpu is not None else [])])
    if older:
        assert gpu is not None and gpu[1] is not None
        return [Signal("arch_intrinsic", Category.GPU_UNSUPPORTED,
                       f"the code calls {name}, which CUDA provides only for compute capability "
                       f"{floor} and up, and {gpu[0]} is {gpu[1]}: it cannot run this code",
                       quotes, NAMED,
                       [Remedy(summary=f"Run it on a GPU of compute capability {floor} or newer "
                               f"(sm_{floor.major}{floor.minor}: Volta, Turing or later"
                               + (", Ampere or later" if floor >= Version("8.0") else "")
                               + "), or use a version of the code without it.")])]
    return [Signal("arch_intrinsic", Category.BUILD_TOOLCHAIN,
                   f"the code calls {name}, which CUDA provides only for compute capability "
                   f"{floor} and up, and the build compiles it for an older arch", quotes, NAMED,
                   [Remedy(summary=f"Build for the GPU's own arch only, which must be {floor} or "
                           "newer: TORCH_CUDA_ARCH_LIST (or nvcc's -arch / "
                           "CMAKE_CUDA_ARCHITECTURES) set to its compute capability, as "
                           "torch.cuda.get_device_capability() gives it; GPUs older than "
                           f"{floor} cannot run this code.")])]
