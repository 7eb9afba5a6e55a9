"""A build told which GPU architectures to compile for, none of which runs on the GPU the report
names: TORCH_CUDA_ARCH_LIST, flash-attn's FLASH_ATTN_CUDA_ARCHS, CUTLASS's CUTLASS_NVCC_ARCHS,
CMake's CMAKE_CUDA_ARCHITECTURES, nvcc's -arch / -gencode. SASS for sm_XY runs on the same major
with a minor of Y or more, an arch-specific sm_XYa only on XY itself, and PTX for compute_XY is
compiled by the driver for any newer GPU (NVIDIA's CUDA C++ Programming Guide, "Binary
Compatibility" and "PTX Compatibility"; "Feature Set Compiler Targets" for the a suffix) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.version import Version

from fadoctor.install.wheels import first_release_with_kernels
from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, NAMED, Signal, dedupe

# One arch: (major, minor, suffix, ptx)
Arch = Tuple[int, int, str, bool]
_SETTING = re.compile(
    r"(TORCH_CUDA_ARCH_LIST|FLASH_ATTN_CUDA_ARCHS|CUTLASS_NVCC_ARCHS|CMAKE_CUDA_ARCHITECTURES)"
    r"\s{0,2}=\s{0,2}(?:\"([^\"\n]{1,80})\"|'([^'\n]{1,80})'|([^\s\"']{1,80}))|"
    r"(?:-arch[= ]|-gencode[= ]arch=)(?:sm|compute)_(\d{2,3}[af]?)")
_CMAKE = ("CUTLASS_NVCC_ARCHS", "CMAKE_CUDA_ARCHITECTURES")
_ONE = re.compile(r"(\d{1,2})\.(\d)([af]?)(\+PTX)?|(\d{2,3})([af]?)")


def _archs(variable: Optional[str], value: str) -> List[Arch]:
    out: List[Arch] = []
    for m in _ONE.finditer(value):
        if m.group(1):
            out.append((int(m.group(1)), int(m.group(2)), m.group(3), bool(m.group(4))))
        else:
            digits = m.group(5)
            out.append((int(digits[:-1]), int(digits[-1]), m.group(6),
                        variable == "CMAKE_CUDA_ARCHITECTURES" and "real" not in value))
    return out


def runs_on(arch: Arch, cc: Version) -> bool:
    major, minor, suffix, ptx = arch
    if ptx:
        return (cc.major, cc.minor) >= (major, minor)
    if suffix == "a":
        return (cc.major, cc.minor) == (major, minor)
    return cc.major == major and cc.minor >= minor


def _value(variable: str, cc: Version) -> str:
    """The GPU's own arch in the variable's notation."""
    if variable == "TORCH_CUDA_ARCH_LIST":
        return f"{cc.major}.{cc.minor}"
    return f"{cc.major}{cc.minor}"


def built_for_others(ctx: Context) -> List[Signal]:
    gpu, cc = ctx.gpu, ctx.gpu_cc_exact
    if gpu is None or cc is None:
        return []
    for index, found in ctx.find(_SETTING, ("arch", "gencode")):
        variable = found.group(1)
        value = found.group(2) or found.group(3) or found.group(4) or found.group(5)
        archs = _archs(variable, value)
        if not archs or any(runs_on(a, cc) for a in archs):
            continue
        shown = ", ".join(f"sm_{a[0]}{a[1]}{a[2]}{'+PTX' if a[3] else ''}" for a in archs)
        own = f"{cc.major}{cc.minor}"
        fix = [] if variable is None else [f"cmake .. -D{variable}={own}"] if variable in _CMAKE \
            else [f"export {variable}={_value(variable, cc)}"]
        return [Signal("arch_list", Category.NO_KERNEL_IMAGE,
                       f"the build compiles only for {shown}; the {gpu[0]} is sm_{own} "
                       f"(compute capability {cc}), which none of them runs on",
                       dedupe([ctx.quote(index), gpu[2]]), HINTED,
                       [Remedy(summary=f"Build for this GPU's own architecture, sm_{own} (SASS "
                               "for another major, or an arch-specific 'a' target of another "
                               "GPU, never runs on it), then rebuild from a clean build folder.",
                               commands=fix)])]
    return []


# NVIDIA PTX ISA 9.2, tcgen05 instructions, "Target ISA Notes": sm_100a, sm_101a (sm_110a from
# PTX 9.0), and the sm_100f / sm_110f families; never sm_120 (GeForce and RTX PRO Blackwell, GB10).
_TCGEN05 = re.compile(r"\btcgen05\b|blackwell_fmha\b", re.I)
_SM12X = re.compile(r"\bsm_?12\d[af]?\b", re.I)
# A binary's own words: "kernel built for sm80-sm100, but running on sm121"
_BUILT_RUNNING = re.compile(r"built for (sm_?\d{2,3}[af]?(?:\s?-\s?sm_?\d{2,3}[af]?)?)[^\n]{0,40}?"
                            r"running on (sm_?\d{2,3}[af]?)", re.I)


def _sm12x(ctx: Context) -> Optional[Tuple[str, Optional[int]]]:
    """The consumer/GB10 Blackwell the report names: (its name, the quote line)."""
    cc = ctx.gpu_cc_exact
    if ctx.gpu is not None and cc is not None and cc.major == 12:
        return f"the {ctx.gpu[0]} (sm_{cc.major}{cc.minor})", None
    said = ctx.first(_SM12X, ("sm_12", "sm12"))
    return (said[1].group(0), said[0]) if said else None


def datacenter_blackwell_only(ctx: Context) -> List[Signal]:
    """Code for sm_100's tcgen05 tensor cores (flash-attn-4's SM100 path, CUTLASS's Blackwell
    FMHA examples) on a GPU of the sm_12x family, which has none."""
    built = ctx.first(_BUILT_RUNNING, ("running on",))
    if built is not None:
        return [Signal("arch_list", Category.NO_KERNEL_IMAGE,
                       f"the binary was built for {built[1].group(1)}, and this GPU is "
                       f"{built[1].group(2)}: none of its kernels runs here",
                       [ctx.quote(built[0])], NAMED,
                       [Remedy(summary=f"Build it for this GPU ({built[1].group(2)}), from a "
                               "source whose kernels support that architecture, or use PyTorch "
                               "SDPA (attn_implementation=\"sdpa\") meanwhile.")])]
    hit = ctx.first(_TCGEN05, ("tcgen05", "blackwell_fmha"))
    gpu = _sm12x(ctx) if hit is not None else None
    if hit is None or gpu is None:
        return []
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.quote(gpu[1])] if gpu[1] is not None else []),
                     *([ctx.gpu[2]] if ctx.gpu else [])])
    return [Signal("tcgen05", Category.GPU_UNSUPPORTED,
                   f"this code uses tcgen05 (the tensor cores of sm_100/sm_103/sm_110: B200, "
                   f"GB200, B300, Thor), which {gpu[0]} does not have: it cannot run there",
                   quotes, NAMED,
                   [_for_sm12x(ctx)],
                   details={"source": "NVIDIA PTX ISA 9.2, tcgen05 instructions, Target ISA Notes"})]


def _for_sm12x(ctx: Context) -> Remedy:
    cc = ctx.gpu_cc_exact
    first = first_release_with_kernels(ctx.matrix, cc) if cc is not None and cc.major == 12 \
        else None
    fa2 = (f"flash-attn {first.version} or later (the first release that compiles for "
           f"sm_{cc.major}{cc.minor}; its wheels are for Linux x86_64, so on an Arm host such as "
           "GB10 it is built from source)" if first is not None and cc is not None
           else "flash-attn 2.x")
    return Remedy(summary=f"On sm_12x use kernels written for it: {fa2}, CUTLASS's SM80/SM120 "
                  "examples, or PyTorch SDPA (attn_implementation=\"sdpa\").",
                  commands=["fadoctor fix --print-pins"])


# A framework's own refusal of the GPU's compute capability (text-generation-inference's
# flash-attention check: "GPU with CUDA capability {major} {minor} is not supported")
_REFUSED = re.compile(r"(?:GPU|device) with (?:CUDA |compute )?(?:is )?capability (\d{1,2})[ .,](\d) "
                      r"is not supported", re.I)


def capability_refused(ctx: Context) -> List[Signal]:
    hit = ctx.first(_REFUSED, ("capability",))
    if hit is None:
        return []
    cc = Version(f"{hit[1].group(1)}.{hit[1].group(2)}")
    old = cc < Version("8.0")
    return [Signal("capability_refused", Category.GPU_UNSUPPORTED,
                   f"the framework refuses flash-attention on compute capability {cc}"
                   + (": its kernels need Ampere (8.0) or newer" if old else ""),
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary="This GPU is too old for flash-attention: the framework falls "
                           "back to its non-flash implementation (slower), or run on an Ampere or "
                           "newer GPU." if old else "Run on a GPU the framework's flash-attention "
                           "build supports, or its non-flash implementation.")])]


# A build's arch table that predates the GPU: torch's cpp_extension (_get_cuda_arch_flags:
# ValueError(f"Unknown CUDA arch ({arch}) or GPU not supported") for an arch missing from its
# supported_arches; torch 2.13.0's list ends at 12.1a), and CMake's FindCUDA
# select_compute_arch.cmake, which torch also bundles (CUDA_SELECT_NVCC_ARCH_FLAGS: "Unknown CUDA
# Architecture Name ${arch_name} in CUDA_SELECT_NVCC_ARCH_FLAGS").
_UNKNOWN_ARCH = re.compile(r"Unknown CUDA arch \((\d{1,2})\.(\d)[af]?(\+PTX)?\) or GPU not supported|"
                           r"Unknown CUDA Architecture Name (\d{1,2})\.(\d)\S{0,12} in "
                           r"CUDA_SELECT_NVCC_ARCH_FLAGS")
# one arch per generation, the ones a table written for that generation's GPUs first names
_COMMON = ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0", "10.0", "12.0")
_BUILDING = re.compile(r"\b(?:build|building|compile|compiling|install|installing)\s+"
                       r"(?!it\b|with\b|from\b|the\b|on\b|fails?\b)([A-Za-z][\w.-]{0,30})\s+"
                       r"(?:with|from|on|for|against)\b", re.I)


def _stand_in(cc: Version) -> str:
    """A known arch whose code runs on `cc`: SASS of the same major and a lower minor, else the
    newest older one as PTX (the driver compiles it for the GPU)."""
    known = [Version(a) for a in _COMMON]
    same = [a for a in known if a.major == cc.major and a.minor < cc.minor]
    if same:
        return str(max(same))
    older = [a for a in known if a < cc]
    return f"{max(older)}+PTX" if older else "8.0+PTX"


def unknown_arch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_UNKNOWN_ARCH, ("unknown cuda arch",))
    if hit is None:
        return []
    major, minor = hit[1].group(1) or hit[1].group(4), hit[1].group(2) or hit[1].group(5)
    cc = Version(f"{major}.{minor}")
    cmake = hit[1].group(4) is not None
    # "+PTX" is written by a person, never detected: the arch came from TORCH_CUDA_ARCH_LIST
    listed = hit[1].group(3) is not None or ctx.has("torch_cuda_arch_list") is not None
    named = ctx.first(_BUILDING, ("build", "compil", "install"))
    package = named[1].group(1) if named else "the package"
    table = "its CMake arch table (CUDA_SELECT_NVCC_ARCH_FLAGS)" if cmake else \
        "the installed torch's cpp_extension arch list"
    stand_in = _stand_in(cc)
    variable = "TORCH_CUDA_ARCH_LIST"
    return [Signal("unknown_arch", Category.BUILD_TOOLCHAIN,
                   f"the build of {package} does not know compute capability {cc} (sm_"
                   f"{major}{minor}): {table} predates "
                   + ("this arch, which TORCH_CUDA_ARCH_LIST names" if listed else "this GPU")
                   + ", so it stops before compiling",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [*([Remedy(summary=f"TORCH_CUDA_ARCH_LIST names {cc}, which this torch's "
                              "cpp_extension does not know (its list ends at the arches of its "
                              f"release): remove {cc} from TORCH_CUDA_ARCH_LIST, or name "
                              f"{stand_in} in its place.",
                              commands=[f'export {variable}="{stand_in}"'])] if listed else []),
                    Remedy(summary=f"Upgrade {package} (its newest release or main branch)"
                           + ("" if cmake else " and torch (torch 2.13.0's list holds 12.1a)")
                           + f" to one that knows sm_{major}{minor}; or build for an arch the "
                           f"table knows whose code runs on compute capability {cc}: "
                           f"{variable}={stand_in}.",
                           commands=[f'export {variable}="{stand_in}"'])],
                   details={"source": "pytorch/pytorch torch/utils/cpp_extension.py "
                                      "(_get_cuda_arch_flags); cmake/Modules_CUDA_fix/upstream/"
                                      "FindCUDA/select_compute_arch.cmake"})]
