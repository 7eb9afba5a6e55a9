"""Run-time failures on the GPU by mechanism: GPU generation, missing kernels for the GPU the report
names (compute capability from the matrix's GPU table), dtype and head-dim limits, AMD ROCm, and
torch.compile graph breaks (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.checks.import_remedies import CSRC, csrc_remedies
from fadoctor.facts.model import Family
from fadoctor.install.wheels import first_release_with_kernels
from fadoctor.report import Category, Remedy
from fadoctor.snippets import snippet
from fadoctor.triage import mech_kernel_image as kernel_image
from fadoctor.triage import mech_kernel_libs as kernel_libs
from fadoctor.triage import remedies as r
from fadoctor.triage import switches
from fadoctor.triage.context import Context
from fadoctor.triage.mech_rocm_target import torch_target
from fadoctor.triage.mech_symbols import KNOWN, package_in
from fadoctor.triage.signal import HINTED, LOGGED, NAMED, Signal, dedupe
from fadoctor.triage.text import Quote
from fadoctor.triage.torch_archs import index_default, newest_with, same_release, torch_lacks, torch_with_arch

_AMPERE = re.compile(r"only supports? Ampere GPUs or newer|Unsupported compute capability", re.I)
# the runtime's strings, or its error names as code and logs print them (CUDA Runtime API
# cudaError: cudaErrorNoKernelImageForDevice = 209, cudaErrorInvalidDeviceFunction = 98; the
# driver API's CUDA_ERROR_NO_BINARY_FOR_GPU = 209)
_NO_KERNEL = re.compile(r"no kernel image is available|invalid device function|device kernel "
                        r"image is invalid|cudaErrorNoKernelImageForDevice|"
                        r"cudaErrorInvalidDeviceFunction|CUDA_ERROR_NO_BINARY_FOR_GPU", re.I)
_NO_KERNEL_NEEDLES = ("kernel image", "invalid device function", "nokernelimage",
                      "invaliddevicefunction", "no_binary_for_gpu")
_TORCH_ARCH = re.compile(r"capability sm_(\d+) is not compatible with the current PyTorch")
_DTYPE = re.compile(r"only supports? (?:fp16 and bf16|fp16/bf16|half|float16 and bfloat16)|"
                    r"bfloat16 is only supported on Ampere", re.I)
_HEAD_DIM = re.compile(r"head[ _]?dim(?:ension)?\s*(?:>|at most|is|must)?\s*(\d+)?[^\n]{0,40}?"
                       r"(?:backward )?(?:requires|only supports|at most|multiple of)\s*([\w/ ]+)?|"
                       r"head_size that is a multiple of 8|"
                       # a wrapper's words: "FlashAttention only supports head dimensions up to 256"
                       r"only supports? head[ _]?dim(?:ension)?s? (?:up to|at most|<=) ?()(\d+)",
                       re.I)
# ROCm/flash-attention's CK build checks the GPU too: "FlashAttention only supports AMD MI200
# GPUs or newer." (its flash_api.cpp: gfx90a/gfx94x only)
_ROCM = re.compile(r"(gfx\w+)\s+is invalid or not supported by Flash-?Attention|"
                   r"hipErrorNoBinaryForGpu|HIP error: invalid device function|"
                   # the HSA runtime refusing a code object of another gfx target
                   r"HSA_STATUS_ERROR_INVALID_ISA|"
                   r"FlashAttention only supports AMD MI200 GPUs or newer", re.I)
# HIP clang's closing line of a failed device compile (llvm-project clang/lib/Frontend/
# CompilerInstance.cpp, printDiagnosticStats:
# "N errors generated when compiling for <target CPU>"): a build for a gfx arch outside every composable
# kernel backend's list (setup.py's allowed archs, in the matrix) is the arch, not the code.
# composable_kernel failing to build for an arch (its CK_TILE_* macros undefined there), or its
# device op refusing the GPU at run time ("Device…Attention…<…> does not support this problem",
# an XDL kernel on a GPU without XDL instructions, such as gfx906).
_CK_ERROR = re.compile(r"[Uu]ndeclared identifier '(?:CK_TILE_\w{1,60}|ck_tile::\w{1,60})'()|"
                       r"Device\w{0,80}Attention\w{0,80}<[^>\n]{0,400}> does not support this "
                       r"problem()")
_HIP_BUILD = re.compile(r"\berrors? generated when compiling for (gfx\w{2,8})")
_GRAPH_BREAK = re.compile(r"[Gg]raph break|torch\._dynamo\.exc\.Unsupported|Dynamo does not know "
                          r"how to trace|PyCapsule\.(?:fwd|bwd|varlen_fwd)|hit config\."
                          r"(?:cache_size_limit|recompile_limit)")
# an extension's source folder, or csrc/layer_norm's own kernel headers (ln_fwd_kernels.cuh,
# ln_bwd_kernels.cuh at every 2.x tag) named in a CUDA error without the folder
_CSRC_PATH = re.compile(r"csrc/(layer_norm|rotary|xentropy|fused_softmax|fused_dense_lib)|"
                        r"\bln_(?:fwd|bwd)_kernels\.cuh()")
_FOLDER_MODULE = {folder.split("/", 1)[1]: module for module, (folder, _) in CSRC.items()}


def gpu_words(ctx: Context) -> str:
    if ctx.gpu is None:
        return "the GPU"
    name, cc, _ = ctx.gpu
    return f"{name} (sm_{cc.major}{cc.minor})" if cc is not None else name


def ampere_only(ctx: Context) -> List[Signal]:
    hit = ctx.first(_AMPERE, ("ampere gpus", "compute capability"))
    if hit is None or ("ampere" not in ctx.low(hit[0]) and ctx.amd):
        return []
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])])
    cc, fa2 = ctx.gpu_cc, ctx.fa2
    floor = ctx.matrix.family_support(Family.FA2).min_cc
    if cc is not None and cc >= Version("10.0") and (fa2 is None or fa2 < Version("2.7.3")):
        gate = ctx.matrix.fa2_arch_gate[0]
        return [Signal("ampere_only", Category.GPU_UNSUPPORTED,
                       f"{gpu_words(ctx)} is newer than this flash-attn accepts: releases "
                       f"{gate.versions} let only sm8x and sm90 through", quotes, NAMED,
                       [Remedy(summary="flash-attn 2.8.0 is the first release whose wheels carry "
                               "Blackwell (sm_100, sm_120) kernels.",
                               commands=['pip install "flash-attn>=2.8.0" --no-build-isolation '
                                         "--no-cache-dir"])], details={"source": gate.source})]
    if cc is not None and cc >= floor:
        return []  # the named GPU is Ampere or newer: the message is about another device
    remedies = r.keep([switches.remedy(ctx, "Turn flash-attention off in the framework:"),
                       r.sdpa("No FlashAttention-2 build runs on GPUs older than Ampere (sm_80).")])
    if cc is None or cc >= Version("7.5"):
        remedies.append(Remedy(summary="FlashAttention 1.x supports Turing (sm_75), with its own, "
                               "older API (transformers uses only 2.x).",
                               commands=['pip install "flash-attn<2"']))
    remedies.append(Remedy(summary='In transformers, attn_implementation="eager" also works on '
                           "any GPU, more slowly."))
    return [Signal("ampere_only", Category.GPU_UNSUPPORTED,
                   f"{gpu_words(ctx)} is older than Ampere: FlashAttention-2 needs compute "
                   f"capability {floor} or newer", quotes, NAMED, remedies,
                   needs=[] if cc else [("the GPU model", r.REVEAL_GPU)])]


def torch_arch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_TORCH_ARCH, ("is not compatible with the current pytorch",))
    if hit is None:
        return []
    digits = hit[1].group(1)
    cc = Version(f"{digits[:-1]}.{digits[-1]}")
    return [Signal("torch_arch", Category.NO_KERNEL_IMAGE,
                   f"torch {ctx.torch or ''} has no kernels for this GPU (sm_{digits}): every CUDA "
                   "call fails with 'no kernel image is available'".replace("torch  ", "torch "),
                   # above the other named causes: with no code for the GPU nothing else runs
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED + 3,
                   same_release(ctx, cc) or torch_with_arch(ctx, cc) or newest_with(ctx, cc))]



def no_kernel_image(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_KERNEL, _NO_KERNEL_NEEDLES)
    if hit is None or ctx.amd:
        return []
    if ctx.first(_TORCH_ARCH, ("is not compatible with the current pytorch",)) is not None:
        return []  # torch says it has no kernels for this GPU (torch_arch): nothing else runs
    index = hit[0]
    quotes = dedupe([ctx.quote(index), *([ctx.gpu[2]] if ctx.gpu else [])])
    if "image is invalid" in ctx.low(index):
        invalid = kernel_image.invalid_image(ctx, quotes)
        if invalid is not None:
            return [invalid]
    folder = _CSRC_PATH.search(ctx.text.lines[index])
    module = _FOLDER_MODULE.get(folder.group(1) or "layer_norm") if folder else next(
        (m for m in CSRC if m in ctx.low(index)), None)
    if module is not None:
        return [Signal("no_kernel_image", Category.NO_KERNEL_IMAGE,
                       f"{module}, flash-attention's separately built extension from "
                       f"{CSRC[module][0]}, has no kernels for {gpu_words(ctx)}: it is "
                       "unmaintained since 2024-01 (flash-attention#1966)", quotes, NAMED,
                       csrc_remedies(module))]
    for line, _ in ctx.find(_NO_KERNEL, _NO_KERNEL_NEEDLES):
        library = kernel_libs.library_at(ctx, line)
        found = kernel_libs.verdict(ctx, library[0], [*quotes, ctx.quote(line), ctx.quote(
            library[1])], NAMED) if library is not None else None
        if found is not None:
            return [found]
    cc = ctx.gpu_cc_exact
    if cc is not None and torch_lacks(ctx, cc):
        return [Signal("no_kernel_image", Category.NO_KERNEL_IMAGE,
                       f"torch {ctx.torch} has no kernels for {gpu_words(ctx)}: its "
                       f"{ctx.torch_variant} build was compiled for other architectures",
                       dedupe([*quotes, *ctx.quotes("torch")]), NAMED, torch_with_arch(ctx, cc))]
    if cc is not None and cc < ctx.matrix.family_support(Family.FA2).min_cc \
            and ctx.text.containing(("flash",)):
        return [Signal("no_kernel_image", Category.GPU_UNSUPPORTED,
                       f"{gpu_words(ctx)} is older than Ampere: no flash-attention 2.x build has "
                       "kernels for it", quotes, NAMED,
                       [r.sdpa("No FlashAttention-2 build runs on GPUs older than Ampere (sm_80).")])]
    return [_fa_kernels(ctx, quotes)]


def _fa_kernels(ctx: Context, quotes: List[Quote]) -> Signal:
    cc, fa2 = ctx.gpu_cc, ctx.fa2
    remedies = r.known_defects(ctx, Category.NO_KERNEL_IMAGE, Category.DRIVER_TOO_OLD,
                               Category.GPU_UNSUPPORTED) if cc is not None else []
    first = first_release_with_kernels(ctx.matrix, cc) if cc is not None else None
    if first is not None:
        remedies.append(Remedy(summary=f"flash-attn {first.version} is the first release whose wheels "
                               f"carry kernels for sm_{cc.major}{cc.minor}." if cc else "",
                               commands=[f'pip install "flash-attn>={first.version}" '
                                         "--no-build-isolation --no-cache-dir"]))
    remedies.append(r.force_build(ctx, "Or compile for this GPU only:"))
    remedies.append(r.sdpa("Meanwhile:"))
    if cc is not None and not ctx.text.containing(("flash",)):
        # nothing names flash-attention: torch first, then the package the report names
        package = package_in(ctx, "\n".join(q.text for q in quotes))
        rebuilt = r.rebuilt_for(package, cc, runnable=package in KNOWN) or [Remedy(
            summary=f"The binary without sm_{cc.major}{cc.minor} code is the extension whose "
                    "frame is last above the error (CUDA_LAUNCH_BLOCKING=1 makes the traceback "
                    "exact): install its build for this GPU, or rebuild it from source with "
                    f"TORCH_CUDA_ARCH_LIST=\"{cc.major}.{cc.minor}\" set for the build (a build "
                    "compiles only the archs that list names; a Docker image's build step too).")]
        remedies = [*torch_with_arch(ctx, cc), *rebuilt,
                    r.sdpa("Meanwhile, PyTorch SDPA runs on this GPU with such a torch.")]
    elif not ctx.text.containing(("flash",)):
        # neither the GPU nor the binary is named: find both, then rebuild that one for the GPU
        remedies = [Remedy(
            summary="Find which binary lacks this GPU's architecture: torch itself (its arch list "
                    "must hold the GPU's sm_XY) or the extension whose frame is last above the "
                    "error (CUDA_LAUNCH_BLOCKING=1 makes the traceback exact). Then install that "
                    "package's build for this GPU, or rebuild it from source with "
                    "TORCH_CUDA_ARCH_LIST set to the GPU's compute capability.",
            commands=['python -c "import torch; print(torch.cuda.get_device_capability(), '
                      'torch.cuda.get_arch_list())"', "export CUDA_LAUNCH_BLOCKING=1"]),
            *index_default(ctx)]
    return Signal("no_kernel_image", Category.NO_KERNEL_IMAGE,
                  f"a CUDA binary has no kernels (SASS or PTX) for {gpu_words(ctx)}: it was built "
                  "for other GPU architectures", quotes, NAMED, remedies,
                  needs=[(w, c) for w, c, known in (
                      ("the GPU model", r.REVEAL_GPU, cc is not None),
                      ("the flash-attn and torch versions", "python -m torch.utils.collect_env; "
                       "pip show flash-attn", fa2 is not None and ctx.torch is not None))
                      if not known])


def dtype(ctx: Context) -> List[Signal]:
    hit = ctx.first(_DTYPE, ("fp16", "bf16", "half", "float16", "bfloat16"))
    if hit is None:
        return []
    old_gpu = "bfloat16 is only" in ctx.low(hit[0])
    want = "float16" if old_gpu else "bfloat16"
    code = ("model = AutoModelForCausalLM.from_pretrained(\n    name, torch_dtype=torch."
            f'{want}, attn_implementation="flash_attention_2")')
    return [Signal("dtype", Category.DTYPE_UNSUPPORTED,
                   "flash-attention ran on float32 (or bfloat16 on a pre-Ampere GPU) tensors: it "
                   "takes fp16 and bf16 only (bf16 on Ampere or newer)",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Load the model in {want} (transformers loads float32 unless "
                           f"torch_dtype is given), or run the step under torch.autocast with "
                           f"dtype=torch.{want}.", code=code)])]


def head_dim(ctx: Context) -> List[Signal]:
    hit = ctx.first(_HEAD_DIM, ("head dim", "headdim", "head_dim", "head_size", "head dimension"))
    if hit is None:
        return []
    index, found = hit
    low = ctx.low(index)
    quotes = dedupe([ctx.quote(index), *([ctx.gpu[2]] if ctx.gpu else [])])
    if "backward" in low and ("a100" in low or "h100" in low):
        return [Signal(
            "head_dim", Category.HEAD_DIM_UNSUPPORTED,
            f"this flash-attn's backward pass for this head dim runs only on A100/H100-class GPUs "
            f"(sm80/sm90), not on {gpu_words(ctx)}: flash-attn 1.x limits head dim > 64, older "
            "2.x head dim > 192", quotes, NAMED,
            [Remedy(summary="flash-attn 2.x runs every head dim up to 256 backward on consumer "
                    "Ampere/Ada GPUs too (head dim 256 without dropout from 2.5.5; the A100/H100 "
                    "requirement is gone from 2.7.3).",
                    commands=['pip install "flash-attn>=2.7.3" --no-build-isolation']),
             r.sdpa("Or disable flash attention for training on this GPU:")])]
    return [Signal(
        "head_dim", Category.HEAD_DIM_UNSUPPORTED,
        "the model's head dim is outside what flash-attention supports (a multiple of 8, at most "
        "256 for FlashAttention-2)", quotes, NAMED,
        [r.sdpa("Use an attention backend without the head-dim limit:")],
        details={"head_dim": found.group(1)} if found.group(1) else {})]


def _ck_archs(ctx: Context) -> List[str]:
    return sorted({a for b in ctx.matrix.rocm_backends if b.backend == "ck" for a in b.gpu_archs})


def rocm(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ROCM, ("gfx", "hiperror", "hip error", "mi200 gpus", "invalid_isa"))
    if hit is None:
        built = ctx.first(_HIP_BUILD, ("generated when compiling for gfx",))
        hit = built if built is not None and built[1].group(1) not in _ck_archs(ctx) \
            and ctx.has("flash", "composable_kernel", "ck_tile") else None
    if hit is None:  # composable_kernel's own code fails to compile for a named arch outside it
        ck_error = ctx.first(_CK_ERROR, ("undeclared identifier", "does not support this problem"))
        named = ctx.seen.get("amd_arch")
        outside = bool(named and named not in _ck_archs(ctx)) or (
            ck_error is not None and "this problem" in ck_error[1].group(0)
            and ctx.has("mi50", "mi60", "mi100", "radeon", "rx 6", "rx 7", "rx 9") is not None)
        hit = ck_error if ck_error is not None and outside else None
    if hit is None:
        return _radeon(ctx)
    if hit[1].group(1) is None:  # a HIP error: torch's own targets, unless flash-attn is there
        own = torch_target(ctx, hit[0])
        if own is not None:
            return [own]
    arch = hit[1].group(1) or ctx.seen.get("amd_arch")
    quotes = dedupe([ctx.quote(hit[0]), *ctx.quotes("amd_arch", "rocm")])
    ck = _ck_archs(ctx)
    fixes = _triton_backend(ctx)
    if ctx.has("vllm"):  # vllm/envs.py: VLLM_USE_TRITON_FLASH_ATTN, its Triton kernel on ROCm
        fixes.insert(0, Remedy(summary="In vLLM on ROCm, take its Triton flash attention, which "
                               "runs on RDNA GPUs: VLLM_USE_TRITON_FLASH_ATTN=1 (the default in "
                               "its later releases; older ones: build without CK flash-attention "
                               "and use the naive attention).",
                               commands=["export VLLM_USE_TRITON_FLASH_ATTN=1"]))
    return [Signal("rocm", Category.ROCM,
                   f"flash-attn's ROCm Composable Kernel backend builds only for {', '.join(ck)} "
                   f"(MI200/MI300), not {arch or 'this AMD GPU'}", quotes, NAMED, fixes)]


def _radeon(ctx: Context) -> List[Signal]:
    """flash-attn failing on a Radeon (RDNA) GPU under ROCm, with no message that says more:
    the Composable Kernel build has no code for it (its archs are the Instinct ones)."""
    radeon = next((g for g in ctx.seen.gpus if g.vendor == "amd" and "mi" not in g.name.lower()
                   and not g.name.lower().startswith("gfx9")), None)
    fails = ctx.text.containing(("flash_attn", "flash-attn", "flash attention"))
    if radeon is None or not fails or not ctx.has("rocm", "hip"):
        return []
    return [Signal("rocm", Category.ROCM,
                   f"flash-attn's ROCm Composable Kernel backend builds only for "
                   f"{', '.join(_ck_archs(ctx))} (Instinct MI200/MI300), not {radeon.name}",
                   dedupe([radeon.quote, ctx.quote(fails[0])]), HINTED, _triton_backend(ctx))]


def _triton_backend(ctx: Context) -> List[Remedy]:
    triton = next((b for b in reversed(ctx.matrix.rocm_backends) if b.backend == "triton"), None)
    remedies: List[Remedy] = []
    if triton is not None:
        pin = f"triton{triton.triton}" if triton.triton and triton.triton.startswith("==") else "triton"
        remedies.append(Remedy(
            summary=f"Build flash-attn's Triton backend, which runs on {', '.join(triton.gpus)} "
                    f"({', '.join(triton.dtypes)}), from a flash-attention checkout.",
            commands=[f"pip install {pin}",
                      f"{triton.enable_env} python setup.py install"]))
    remedies.append(r.sdpa("Or use PyTorch SDPA, which ROCm torch runs on this GPU:"))
    return remedies


# Dynamo's error trailer: "from user code:" and the frames it was tracing, the last one the line
# it could not compile (torch/_dynamo/exc.py, augment_exc_message)
_USER_CODE = re.compile(r"^\s*from user code:\s*$")
_HF_FRAME = re.compile(r'File "[^"]*[\\/]transformers[\\/](?:models|modeling_|masking_utils)')


def _in_model_code(ctx: Context) -> List[Signal]:
    """torch.compile stopping in a transformers model's own Python (a branch on a tensor's
    values while building the mask), flash-attention not in the frames."""
    hit = ctx.first(_USER_CODE, ("from user code",))
    if hit is None:
        return []
    frames = [i for i in range(hit[0] + 1, min(len(ctx.text.lines), hit[0] + 60))
              if 'File "' in ctx.text.lines[i]]
    if not frames or not _HF_FRAME.search(ctx.text.lines[frames[-1]]) \
            or any("flash_attn" in ctx.text.lines[i] for i in frames):
        return []
    return [Signal("graph_break", Category.COMPILE_GRAPH_BREAK,
                   "torch.compile could not trace the model's own code (transformers' Python, "
                   "where a branch depends on a tensor's values, such as the attention mask's)",
                   [ctx.quote(hit[0]), ctx.quote(frames[-1]),
                    *([ctx.quote(frames[-1] + 1)] if frames[-1] + 1 < len(ctx.text.lines) else [])],
                   LOGGED,
                   [Remedy(summary="Load the model with attn_implementation=\"sdpa\" (with a "
                           "static cache for generation), the path transformers compiles, or "
                           "compile without fullgraph=True so Dynamo breaks the graph there "
                           "instead of failing; a newer transformers may build the mask "
                           "without the data-dependent branch.",
                           code='model = AutoModelForCausalLM.from_pretrained(name, '
                                'attn_implementation="sdpa")\nmodel = torch.compile(model)')])]


def graph_breaks(ctx: Context) -> List[Signal]:
    hit = ctx.first(_GRAPH_BREAK, ("graph break", "dynamo", "pycapsule", "recompile_limit",
                                   "cache_size_limit"))
    if hit is None:
        return _in_model_code(ctx)
    fa2 = ctx.fa2
    remedies: List[Remedy] = []
    if fa2 is None or fa2 < Version("2.7.0"):
        remedies.append(Remedy(summary="flash-attn 2.7.0 and later register their kernels as "
                               "torch custom ops (with torch >= 2.4), which torch.compile traces "
                               "without a graph break.",
                               commands=['pip install "flash-attn>=2.7.0" --no-build-isolation']))
    for name in ("dynamo_disable_flash_attn", "dynamo_suppress_errors"):
        found = snippet(name)
        remedies.append(Remedy(summary=found.title, code=found.code))
    return [Signal("graph_break", Category.COMPILE_GRAPH_BREAK,
                   "torch.compile cannot trace into the flash-attention call and breaks the graph "
                   "there", dedupe([ctx.quote(hit[0]), *filter(None, [ctx.fa_quote()])]),
                   LOGGED, remedies)]


# TensorRT-LLM's attention kernels (cpp/tensorrt_llm/kernels/unfusedAttentionKernels.cu:
# `constexpr int x = (sizeof(T) == 4) ? 4 : 8; TLLM_CHECK_WITH_INFO(size_per_head % x == 0,
# "Size per head is not a multiple of X")`): the head size must be a multiple of 8 for 16-bit
# types (4 for fp32)
_TRTLLM_HEAD = re.compile(r"Size per head is not a multiple of X")


def trtllm_head_size(ctx: Context) -> List[Signal]:
    hit = ctx.first(_TRTLLM_HEAD, ("size per head",))
    if hit is None:
        return []
    return [Signal("trtllm_head", Category.HEAD_DIM_UNSUPPORTED,
                   "TensorRT-LLM's attention kernel needs the head size (hidden_size / num_heads) "
                   "to be a multiple of 8 for 16-bit types (4 for fp32): this "
                   "model's is not (e.g. 3200 / 32 = 100)", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Pad the attention heads of the checkpoint to a head size that "
                           "is a multiple of 8 (100 -> 104, or 128 for the fused kernels), then "
                           "rebuild the engine; or turn off the feature that takes this kernel "
                           "(the INT8 KV cache, or the unfused path).")])]
