"""torch's headers refusing the C++ standard an extension compiles with: "#error C++20 or later
compatible compiler is required to use ATen." (torch/include/ATen/ATen.h and torch/all.h: C++17
in the torch 2.13.0 wheel, C++20 in the 2.14.0 wheel, both read from the wheels). An extension
whose setup.py passes an older -std (flash-attn's setup.py passes -std=c++17 to nvcc and the host
compiler) cannot build against the newer torch: its source or build flags predate it. The fix
is a release of the extension built for that standard, or a torch whose headers accept the
older one. Also LLVM's "'sm_120' is not a recognized processor for this target": a JIT
compiler (Triton) older than the GPU (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env
from fadoctor.triage.context import Context
from fadoctor.triage.mech_symbols import package_in
from fadoctor.triage.signal import NAMED, Signal, dedupe

_STD = re.compile(r"#error C\+\+(\d\d) or later compatible compiler is required to use "
                  r"(ATen|PyTorch)")
# the last torch whose headers accept the standard before the one they require (from the wheels)
_LAST_BEFORE = {"20": "2.13"}


def cxx_standard(ctx: Context) -> List[Signal]:
    hit = ctx.first(_STD, ("compatible compiler is required",))
    if hit is None:
        return []
    index, found = hit
    need = found.group(1)
    package = package_in(ctx) or ("flash-attn" if ctx.fa2 is not None or ctx.text.containing(
        ("flashattention", "flash attention")) else "the extension")
    torch = f" {ctx.torch}" if ctx.torch else ""
    last = _LAST_BEFORE.get(need)
    fixes = [Remedy(summary=f"Build a release of {package} whose build compiles with "
                    f"-std=c++{need} (its newest release or main branch; an older one passes an "
                    "older -std)."),
             Remedy(summary=("Or use a torch whose headers accept the older standard: torch "
                             f"{last} or older (C++17)" if last else
                             "Or use a torch whose headers accept the standard the build uses")
                    + f", with {package} built for it.")]
    return [Signal("cxx_standard", Category.VERSION_CONFLICT,
                   f"this torch{torch}'s headers need C++{need}, and {package}'s build compiles "
                   "with an older C++ standard: its source or build flags predate this torch",
                   dedupe([ctx.quote(index), *ctx.quotes("torch")]), NAMED, fixes)]


# LLVM's target for a GPU it does not know ("'sm_120' is not a recognized processor for this
# target (ignoring processor)", then "LLVM ERROR: Cannot select: intrinsic ..."): printed by the
# LLVM inside a JIT compiler, most often Triton's, that predates the GPU's architecture
_LLVM_CPU = re.compile(r"'(sm_\d{2,3}a?)' is not a recognized processor for this target")


def llvm_target(ctx: Context) -> List[Signal]:
    hit = ctx.first(_LLVM_CPU, ("is not a recognized processor",))
    if hit is None:
        return []
    index, found = hit
    sm = found.group(1)
    return [Signal("llvm_target", Category.NO_KERNEL_IMAGE,
                   f"the LLVM inside a JIT compiler (Triton's, for Triton kernels such as "
                   f"SageAttention's or torch.compile's) does not know {sm}: that Triton predates "
                   "this GPU and cannot generate code for it",
                   dedupe([ctx.quote(index), *ctx.quotes("torch")]), NAMED,
                   [Remedy(summary=f"Upgrade Triton to a release that targets {sm}: the one a "
                           f"torch with {sm} code pins (install that torch, then `pip install "
                           "--upgrade triton` to the version its requirements name; on Windows "
                           "the triton-windows package)."),
                    Remedy(summary="Meanwhile, take an attention mode that needs no Triton "
                           "kernels (SDPA), and leave torch.compile off.")])]


# a torch header the extension's source includes and this torch does not ship
_TORCH_HEADER = re.compile(r"fatal error: ((?:ATen|c10|torch)/[\w/.]{1,120}\.(?:h|hpp|cuh)): No such "
                           r"file or directory")


def torch_header(ctx: Context) -> List[Signal]:
    """The source was written against another torch's C++ headers (a header added or moved
    since): the torch it supports is what fixes it, not the compiler."""
    hit = ctx.first(_TORCH_HEADER, ("no such file",))
    if hit is None:
        return []
    header = hit[1].group(1)
    package = package_in(ctx, ctx.text.lines[hit[0]]) or "the package"
    return [Signal("torch_header", Category.VERSION_CONFLICT,
                   f"the source includes {header}, which this torch"
                   + (f" {ctx.torch}" if ctx.torch else "") + " does not ship: it was written for "
                   "another torch (most often a newer one, whose headers added it)",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), NAMED,
                   [Remedy(summary=f"Upgrade torch to a release {package} supports (its README and "
                           "setup.py name the range), then build again."),
                    Remedy(summary=f"Or pin {package} to a release written for this torch.")])]


# MSVC reports __cplusplus as 199711L unless /Zc:__cplusplus is passed (Microsoft's "/Zc:__cplusplus
# (Enable updated __cplusplus macro)"), so CUTLASS's platform.h, which defines its C++17 traits
# (is_unsigned_v, is_same_v, ...) only where __cplusplus says C++17, leaves them out while the
# code that uses them is compiled: a CUTLASS-based extension built on Windows without that flag
_CUTLASS_V = re.compile(r"namespace \"?cutlass::platform\"? has no member \"?(\w+_v)\b")


def msvc_cplusplus(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CUTLASS_V, ("cutlass::platform",))
    if hit is None:
        return []
    package = package_in(ctx) or "the extension"
    return [Signal("msvc_cplusplus", Category.BUILD_TOOLCHAIN,
                   f"MSVC compiled {package}'s CUTLASS code without /Zc:__cplusplus: it then "
                   "reports __cplusplus as C++98, so CUTLASS leaves out its C++17 traits "
                   f"({hit[1].group(1)}) that the code uses", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Pass /Zc:__cplusplus to MSVC through nvcc (NVCC_APPEND_FLAGS="
                           "\"-Xcompiler /Zc:__cplusplus\", and for the host files CL=/Zc:"
                           "__cplusplus) and build again; or install a release whose setup.py "
                           "passes it, or a prebuilt Windows wheel.",
                           commands=[command("export", env("NVCC_APPEND_FLAGS",
                                                           "-Xcompiler /Zc:__cplusplus")),
                                     command("export", env("CL", "/Zc:__cplusplus"))])])]


# torch 2.9's torch/csrc/dynamo/compiled_autograd.h has an `if constexpr (::std::is_same_v<...>)`
# branch that MSVC, as nvcc's host compiler, rejects with C2872 ('std': ambiguous symbol, against
# <valarray>'s std). The header already skips that branch `#if defined(_WIN32) &&
# (defined(USE_CUDA) || defined(USE_ROCM))` (pytorch/pytorch#144707), a macro torch's own build
# defines and an extension's build does not (pytorch/pytorch#166123: torch 2.8 builds, 2.9 and
# later do not).
_AUTOGRAD_C2872 = re.compile(r"dynamo[/\\]compiled_autograd\.h\(\d+\)\s*:\s*error C2872")


def msvc_std_ambiguous(ctx: Context) -> List[Signal]:
    hit = ctx.first(_AUTOGRAD_C2872, ("compiled_autograd.h",))
    if hit is None:
        return []
    package = package_in(ctx) or "the extension"
    return [Signal("msvc_std_ambiguous", Category.BUILD_TOOLCHAIN,
                   "MSVC rejects an if-constexpr branch of torch's compiled_autograd.h (torch 2.9 "
                   "and later) while nvcc compiles " + package + "'s host code: torch skips that "
                   "branch on Windows only where USE_CUDA is defined, and an extension's build "
                   "does not define it", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Define USE_CUDA for the build, so the header takes its "
                           "Windows branch: -DUSE_CUDA in setup.py's extra_compile_args (both "
                           "the cxx and nvcc lists), or set it for every compile as below, and "
                           "build again. Otherwise build against torch 2.8, or take a prebuilt "
                           "Windows wheel of " + package + ".",
                           commands=[command("export", env("CL", "/DUSE_CUDA")),
                                     command("export", env("NVCC_APPEND_FLAGS", "-DUSE_CUDA"))])],
                   details={"source": "pytorch/pytorch torch/csrc/dynamo/compiled_autograd.h "
                                      "(the _WIN32 && USE_CUDA guard, pytorch/pytorch#144707); "
                                      "pytorch/pytorch#166123"})]


# clang on macOS refusing a C++ library feature newer than the deployment target the build names
# (MACOSX_DEPLOYMENT_TARGET, or -mmacosx-version-min): "aligned allocation function of type ... is
# only available on macOS 10.14 or newer" (C++17 aligned new, which torch's pybind11 headers use),
# "'path' is unavailable: introduced in macOS 10.15" (std::filesystem)
_MACOS_MIN = re.compile(r"is only available on macOS (\d{2}(?:\.\d{1,2})?) or newer|is unavailable: "
                        r"introduced in macOS (\d{2}(?:\.\d{1,2})?)")


def macos_target(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MACOS_MIN, ("only available on macos", "introduced in macos"))
    if hit is None:
        return []
    need = hit[1].group(1) or hit[1].group(2)
    return [Signal("macos_target", Category.BUILD_TOOLCHAIN,
                   f"the build targets a macOS older than {need} (MACOSX_DEPLOYMENT_TARGET), and "
                   f"the C++ code uses a library feature that macOS has only from {need}",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary=f"Build with MACOSX_DEPLOYMENT_TARGET={need} (or later), not "
                           "the older target the instructions or environment set.",
                           commands=[command("export", env("MACOSX_DEPLOYMENT_TARGET", need))])])]
