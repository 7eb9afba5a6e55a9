"""ptxas refusing what it was asked to assemble: a GPU target it does not know (Triton's own
bundled ptxas older than the GPU), and an arch-specific instruction assembled for a target that
lacks it (a build's arch list pairing one GPU's kernels with another's target) (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

# ptxas' own words (`--gpu-name`, where nvcc says `--gpu-architecture`)
_TARGET = re.compile(r"Value '(sm_\d{2,3}[af]?)' is not defined for option 'gpu-name'")
# Triton runs its bundled ptxas (triton/backends/nvidia/bin/ptxas) unless TRITON_PTXAS_PATH names
# another: triton-lang/triton@00c7dbd:python/triton/knobs.py (env_nvidia_tool("ptxas"), key
# f"TRITON_{binary.upper()}_PATH", default os.path.join(..., "backends", "nvidia", "bin", binary))
_TRITON = re.compile(r"triton/backends/nvidia/bin/ptxas|PTXASError|Internal Triton PTX codegen")
# "ptxas error: Instruction 'wgmma.fence' not supported on .target 'sm_120'": PTX ISA, each
# instruction's "Target ISA notes" (wgmma.* requires sm_90a; tcgen05.* the sm_100a family)
_INSTRUCTION = re.compile(r"Instruction '([\w.]{1,60})[^']{0,60}' not supported on \.target "
                          r"'(sm_\d{2,3}[af]?)'")
_NEEDS = {"wgmma": "sm_90a (Hopper)", "tcgen05": "sm_100a (datacenter Blackwell)",
          "setmaxnreg": "sm_90a or sm_100a"}


def unknown_target(ctx: Context) -> List[Signal]:
    """Triton's bundled ptxas does not know the GPU's target (a GPU newer than the ptxas Triton
    ships): the ptxas of a CUDA toolkit that knows it, through TRITON_PTXAS_PATH."""
    hit = ctx.first(_TARGET, ("for option 'gpu-name'",))
    if hit is None:
        return []
    # 'gpu-name' is ptxas' own option (nvcc's is 'gpu-architecture'): ptxas run by itself, which
    # is what Triton does; said or not, Triton's copy is the one a Python stack runs
    seen = any(_TRITON.search(ctx.text.lines[i]) for i in ctx.text.containing(
        ("ptxas", "triton ptx")))
    whose = "the ptxas bundled with Triton" if seen else \
        "the ptxas that ran (ptxas' own option: Triton's bundled copy, for torch.compile and vLLM)"
    target = hit[1].group(1)
    digits = re.sub(r"\D", "", target)
    return [Signal("triton_ptxas", Category.BUILD_TOOLCHAIN,
                   f"{whose} does not know {target}: the GPU is newer than "
                   "the CUDA that ptxas came from, so every Triton kernel fails to assemble",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary=f"Point Triton at the ptxas of an installed CUDA toolkit that "
                           f"knows {target} (`nvcc --list-gpu-arch` lists compute_{digits}); Triton uses "
                           "TRITON_PTXAS_PATH before its own copy. Or upgrade triton (with the "
                           "torch that pins it) to a release built with a newer CUDA.",
                           commands=["nvcc --list-gpu-arch",
                                     "export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas",
                                     # Triton 3.6.0 on runs ptxas-blackwell for sm_100+ (the
                                     # release wheels' knobs.py: env_nvidia_tool("ptxas-blackwell"),
                                     # key TRITON_PTXAS_BLACKWELL_PATH; compiler.py get_ptxas)
                                     *(["export TRITON_PTXAS_BLACKWELL_PATH=/usr/local/cuda/bin/"
                                        "ptxas"] if int(digits) >= 100 else [])])],
                   details={"source": "triton-lang/triton@00c7dbd:python/triton/knobs.py "
                                      "(env_nvidia_tool('ptxas'): TRITON_PTXAS_PATH)"})]


def instruction_target(ctx: Context) -> List[Signal]:
    """An instruction only one GPU's arch-specific target has, assembled for another target: the
    build compiled that GPU's kernels for this target (an arch list naming both, such as "9.0;12.0"
    for an RTX 5090), not a missing toolkit. Build for the GPU's own arch only."""
    hit = ctx.first(_INSTRUCTION, ("not supported on .target",))
    if hit is None:
        return []
    instruction, target = hit[1].group(1), hit[1].group(2)
    family = instruction.split(".", 1)[0]
    needs = _NEEDS.get(family)
    cc = ctx.gpu_cc_exact
    arch = f"{cc.major}.{cc.minor}" if cc is not None else None
    own = (f"this GPU's own arch ({arch})" if arch else "the GPU's own arch only")
    return [Signal("ptxas_instruction", Category.BUILD_TOOLCHAIN,
                   f"the build assembled {instruction}"
                   + (f", an instruction only {needs} has," if needs else "") +
                   f" for {target}: kernels written for another GPU were compiled for this "
                   "target (TORCH_CUDA_ARCH_LIST names more than the GPU's own arch)",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary=f"Build with TORCH_CUDA_ARCH_LIST set to {own}, leaving out the "
                           "other GPU's arch whose kernels use that instruction (run it in the "
                           "source checkout being built).",
                           commands=[command(env("TORCH_CUDA_ARCH_LIST", arch), "pip", "install",
                                             "--no-build-isolation", "-v", ".")] if arch else [])],
                   details={"source": "PTX ISA, Target ISA notes of each instruction "
                                      "(wgmma: sm_90a; tcgen05: sm_100a family)"})]


# ptxas refusing PTX of a newer ISA than it knows: "fatal   : Unsupported .version 8.6; current
# version is '8.5'". Under Triton, the ISA comes from its ptx_get_version table: Triton 3.1.0 maps
# CUDA 12.x to 8.x (12.6 -> 8.6, which CUDA 12.6's ptxas does not know: PTX ISA 8.5 is CUDA 12.5
# and 12.6's), 3.2.0 maps 12.6 to 8.5 (the release wheels' triton/backends/nvidia/compiler.py).
_ISA = re.compile(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'")
# the first CUDA release whose ptxas knows each PTX ISA (NVIDIA PTX ISA, "Release History"; as
# NVIDIA/cuda-python's cuda/bindings/utils/_ptx_utils.py tabulates it): 6.x is CUDA 9-10, 7.N is
# 11.N, 8.0-8.5 are 12.0-12.5, then 8.6 12.7, 8.7 12.8, 8.8 12.9, 9.0 13.0
_ISA_CUDA = {"6.0": "9.0", "6.1": "9.1", "6.2": "9.2", "6.3": "10.0", "6.4": "10.1", "6.5": "10.2",
             **{f"7.{n}": f"11.{n}" for n in range(9)}, **{f"8.{n}": f"12.{n}" for n in range(6)},
             "8.6": "12.7", "8.7": "12.8", "8.8": "12.9", "9.0": "13.0", "9.1": "13.1"}


def isa_version(ctx: Context) -> List[Signal]:
    hit = ctx.first(_ISA, ("unsupported .version",))
    if hit is None:
        return []
    asked, known = hit[1].group(1), hit[1].group(2)
    triton = bool(ctx.text.containing(("triton",)))
    if int(asked.split(".")[0]) < 8 and asked in _ISA_CUDA:
        return [_old_toolkit(ctx, hit[0], asked, known, triton)]
    if int(known.split(".")[0]) < 8 <= int(asked.split(".")[0]):
        # PTX ISA 7.x is CUDA 11's and 8.x CUDA 12's (PTX ISA, "Release History"): the ptxas
        # that ran is an old toolkit's (on PATH, or TRITON_PTXAS_PATH), not Triton's own
        return [Signal("ptx_isa", Category.BUILD_TOOLCHAIN,
                       f"the PTX asks for ISA {asked} (a CUDA 12 toolkit's) and the ptxas that ran "
                       f"knows {known} (a CUDA 11 toolkit's): an old CUDA toolkit assembles it",
                       [ctx.quote(hit[0])], NAMED,
                       [Remedy(summary="Assemble with a CUDA 12 toolkit's ptxas (put its bin/ first "
                               "on PATH, or TRITON_PTXAS_PATH=<CUDA 12>/bin/ptxas), or let "
                               "Triton run its bundled ptxas (unset TRITON_PTXAS_PATH).")],
                       details={"source": "NVIDIA PTX ISA, Release History (ISA 7.x: CUDA 11, "
                                          "8.x: CUDA 12)"})]
    fixes = [Remedy(summary="Upgrade Triton (with the torch that pins it): 3.2 maps CUDA 12.6 to "
                    "PTX 8.5, and each newer release knows newer toolkits; or let it run its "
                    "bundled ptxas (unset TRITON_PTXAS_PATH), whose PTX version its table "
                    "matches.")] if triton else []
    fixes.append(Remedy(summary=f"Or assemble with a ptxas that knows PTX ISA {asked} (a newer "
                        "CUDA toolkit's), or emit PTX for the ptxas in use: the compiler's "
                        "target CUDA and the ptxas must be one toolkit."))
    return [Signal("ptx_isa", Category.VERSION_CONFLICT if triton else Category.BUILD_TOOLCHAIN,
                   f"the PTX asks for ISA {asked} and this ptxas knows {known}: "
                   + ("Triton's PTX-version table maps this toolkit to an ISA its ptxas lacks "
                      "(Triton 3.1 maps CUDA 12.6 to 8.6)" if triton else
                      "the code generator targets a newer CUDA than the ptxas assembling it"),
                   [ctx.quote(hit[0])], NAMED, fixes,
                   details={"source": "triton release wheels 3.1.0/3.2.0 "
                                      "triton/backends/nvidia/compiler.py (ptx_get_version)"})]


def _old_toolkit(ctx: Context, index: int, asked: str, known: str, triton: bool) -> Signal:
    """PTX of a CUDA 11 (or older) ISA that the ptxas on the machine does not know: that ptxas
    is an older toolkit's than the code generator's target (Triton before its bundled ptxas used
    the system's)."""
    cuda, have = _ISA_CUDA[asked], _ISA_CUDA.get(known)
    fixes = [Remedy(summary=f"Assemble with the ptxas of CUDA {cuda} or newer: install that "
                    "toolkit and put its bin/ first on PATH (or run in NVIDIA's CUDA or PyTorch "
                    "container, whose toolkit is new enough).")]
    if triton:
        fixes.append(Remedy(summary="Or upgrade Triton: its releases now ship their own ptxas, "
                            "so the system's toolkit no longer assembles its kernels."))
    return Signal("ptx_isa", Category.BUILD_TOOLCHAIN,
                  f"the PTX asks for ISA {asked} (CUDA {cuda}'s) and the ptxas that ran knows "
                  f"{known}" + (f" (CUDA {have}'s)" if have else "") + ": the CUDA toolkit "
                  "assembling it is older than the code generator targets",
                  [ctx.quote(index)], NAMED, fixes,
                  details={"source": "NVIDIA PTX ISA, Release History"})


# ptxas refusing PTX whose `.version` is older than its target or an instruction needs: "PTX
# .version 7.4 does not support .target sm_89", "Feature 'cvt with .e4m3x2/.e5m2x2 on sm_89'
# requires PTX ISA .version 8.1 or later". PTX ISA (NVIDIA's "Parallel Thread Execution ISA",
# section "Target Directives", .target's PTX ISA notes): each target and feature has a first
# ISA version; the PTX's `.version` is the code generator's choice (Triton's ptx_get_version, an
# LLVM/nvcc release), so the generator is older than the GPU or the feature.
_OLD_FOR_TARGET = re.compile(r"PTX \.version (\d+\.\d+) does not support \.target (sm_\d{2,3}[af]?)")
_OLD_FOR_FEATURE = re.compile(r"Feature '([^']{1,80})' requires PTX ISA \.version (\d+\.\d+) or "
                              r"later")


def old_isa(ctx: Context) -> List[Signal]:
    hit = ctx.first(_OLD_FOR_TARGET, ("does not support .target",)) or \
        ctx.first(_OLD_FOR_FEATURE, ("requires ptx isa",))
    if hit is None:
        return []
    target = hit[1].re is _OLD_FOR_TARGET
    what = (f"PTX ISA {hit[1].group(1)} is older than {hit[1].group(2)} needs" if target else
            f"'{hit[1].group(1)}' needs PTX ISA {hit[1].group(2)} or later")
    triton = bool(_TRITON.search(ctx.text.joined)) or bool(ctx.text.containing(("triton",)))
    generator = "Triton" if triton else "the code generator"
    fixes = [Remedy(summary=(
        "Upgrade Triton (for torch.compile, the torch whose pinned Triton knows this GPU: "
        "pip install --upgrade torch brings its triton / pytorch-triton); a newer Triton emits a "
        "newer PTX ISA for the same GPU." if triton else
        "Upgrade the compiler that emitted the PTX (its CUDA toolkit, or the LLVM/Triton "
        "release) to one that knows this GPU and feature; the PTX's .version is its choice."))]
    return [Signal("ptx_isa_old", Category.VERSION_CONFLICT,
                   f"ptxas refuses the PTX: {what}. {generator} emitted PTX for an older ISA than "
                   "this GPU (or this instruction) needs, so it is older than the GPU",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED, fixes,
                   details={"source": "NVIDIA PTX ISA, Target Directives: .target (PTX ISA "
                                      "notes: the first ISA version of each target)"})]
