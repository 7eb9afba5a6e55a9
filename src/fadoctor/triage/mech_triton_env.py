"""Triton itself missing, too old, or asked for a CUDA or a GPU it does not know, in torch's and
Triton's own words (pure):
- torch's TritonMissing (torch/_inductor/exc.py): "Cannot find a working triton installation.
  Either the package is not installed or it is too old." and Python's `No module named 'triton'`:
  the Triton torch's wheel pins (data/ext_torch.yaml); on Windows, where Triton publishes no
  wheels, the triton-windows fork of that minor;
- torch's GPUTooOldForTriton: "Triton only supports devices of CUDA Capability >= 7.0";
- Triton's ptx_get_version (triton/backends/nvidia/compiler.py in the release wheels): 3.2.x maps
  only CUDA 12.0-12.6 to a PTX version and raises "Triton only support CUDA 10.0 or higher, but
  got CUDA version: 12.8" for a newer ptxas; 3.3 takes any 12.x; 3.4 and older raise it for
  13.x, 3.5.0 is the first with a CUDA 13 branch."""

from __future__ import annotations

import re
from typing import List

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy, Severity
from fadoctor.safety.shell import command
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows
from fadoctor.triage.mech_triton_pin import triton_for
from fadoctor.triage.signal import IMPLIED, NAMED, Signal, dedupe

# (any case: a person retelling it writes "no module named Triton")
_MISSING = re.compile(r"Cannot find a working triton installation|"
                      r"No module named '?triton'?(?![.\w])", re.I)
_TOO_OLD_GPU = re.compile(r"too old to be supported by the triton GPU compiler|"
                          r"Triton only supports devices of CUDA Capability >= 7\.0|"
                          r"\bGPUTooOldForTriton\b")
_PTX = re.compile(r"Triton only support CUDA 10\.0 or higher(?:, but got CUDA version: "
                  r"(\d+)\.(\d+))?")
# xformers' log line when its optional Triton kernels cannot import (xformers/__init__.py); its
# earlier releases added the exception on a second line, "Error caught was: {e}" (as its fork
# byteformers/triton keeps it), which a report may quote alone
_XFORMERS_NOTICE = re.compile(r"A matching Triton is not available, some optimizations \w{3,5} not be "
                              r"enabled|Error caught was: No module named '?triton'?")
SOURCE = "torch/_inductor/exc.py (TritonMissing, GPUTooOldForTriton); triton release wheels' " \
         "triton/backends/nvidia/compiler.py (ptx_get_version: 3.1.0 to 3.5.0)"


def missing(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MISSING, ("working triton installation", "no module named"))
    if hit is None:
        return []
    notice = ctx.first(_XFORMERS_NOTICE, ("a matching triton is not available",
                                          "error caught was: no module named"))
    if notice is not None and any(abs(notice[0] - i) <= 3 for i, _ in ctx.find(
            _MISSING, ("working triton installation", "no module named"))) and not ctx.text.containing((
            "torch.compile", "inductor", "triton.compiler", "sageattention")):
        return [Signal("xformers_triton_notice", Category.INFO,
                       "xformers' notice that its optional Triton kernels are off (Triton is not "
                       "importable here): a warning, not an error; attention still runs through "
                       "xformers' CUDA kernels", [ctx.quote(notice[0]), ctx.quote(hit[0])], NAMED,
                       [Remedy(summary="Nothing to fix: ignore it, or install Triton (on Windows "
                               "triton-windows of torch's Triton minor) only if something else "
                               "needs it.")], severity=Severity.INFO,
                       details={"source": "facebookresearch/xformers xformers/__init__.py "
                                          "(_is_triton_available: logger.warning)"})]
    windows = on_windows(ctx)
    stated = ctx.package("triton", "triton-windows")
    quotes = dedupe([ctx.quote(hit[0]), *([stated.quote] if stated else [])])
    if windows:
        return [Signal("triton_missing", Category.VERSION_CONFLICT if stated else
                       Category.NOT_INSTALLED,
                       "torch.compile (Inductor) and Triton kernels need Triton, which publishes "
                       "no Windows wheels: " + ("the Triton installed here is not one torch can "
                                                "use" if stated else "none is installed"),
                       quotes, NAMED,
                       [triton_for(ctx, True),
                        Remedy(summary="Or run without compiling: no torch.compile (eager), and "
                               "attention through PyTorch SDPA instead of Triton kernels.")],
                       details={"source": SOURCE})]
    return [Signal("triton_missing", Category.VERSION_CONFLICT if stated else
                   Category.NOT_INSTALLED,
                   "torch cannot use Triton here: " + (f"Triton {stated.value} is not the one "
                                                       "its wheel requires" if stated else
                                                       "it is not installed in this environment"),
                   quotes, NAMED, [triton_for(ctx, False)], details={"source": SOURCE})]


def gpu_too_old(ctx: Context) -> List[Signal]:
    hit = ctx.first(_TOO_OLD_GPU, ("too old to be supported", "capability >= 7.0",
                                   "gputoooldfortriton"))
    if hit is None:
        return []
    gpu = ctx.gpu[0] if ctx.gpu else "this GPU"
    return [Signal("triton_gpu_too_old", Category.GPU_UNSUPPORTED,
                   f"Triton compiles for compute capability 7.0 (Volta) and newer; {gpu} is "
                   "older, so torch.compile and every Triton kernel (Unsloth's, Liger's, "
                   "flex_attention) fail on it",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED,
                   [Remedy(summary="Run without Triton on this GPU: no torch.compile (eager; "
                           "TORCHDYNAMO_DISABLE=1 makes every torch.compile call a no-op, "
                           "torch/_dynamo/config.py), and the libraries' non-Triton paths; or use "
                           "a GPU of compute capability 7.0 or newer (a T4 instead of a P100 on "
                           "Kaggle/Colab).", commands=["export TORCHDYNAMO_DISABLE=1"])],
                   details={"source": SOURCE})]


def ptx_version(ctx: Context) -> List[Signal]:
    found = list(ctx.find(_PTX, ("triton only support cuda",)))
    if not found:
        return []
    hit = next((f for f in found if f[1].group(1)), found[0])  # the message with its number
    major, minor = hit[1].group(1), hit[1].group(2)
    try:
        cuda = Version(f"{major}.{minor}") if major else None
    except InvalidVersion:
        cuda = None
    windows = on_windows(ctx)
    if cuda is not None and cuda.major == 12:
        said = (f"Triton 3.2 maps only CUDA 12.0-12.6 to a PTX version, and the ptxas it runs is "
                f"CUDA {cuda}: it stops before compiling anything")
        need, torch = "3.3", "torch 2.7 pins Triton 3.3"
    elif cuda is not None and cuda.major == 13:
        said = (f"Triton before 3.5 maps no CUDA 13 to a PTX version, and the ptxas it runs is "
                f"CUDA {cuda}")
        need, torch = "3.5", "torch 2.9 pins Triton 3.5"
    else:
        said = (f"this Triton does not know CUDA {cuda or 'of the ptxas it runs'}: the ptxas it "
                "uses is newer than its table of CUDA versions")
        need, torch = None, "each torch pins one Triton"
    upgrade = (command("pip", "install", "--upgrade", f"triton-windows>={need}") if windows and need
               else None)
    fixes = [Remedy(summary=("Upgrade Triton to " + (f"{need} or newer" if need else "a release "
                             "that knows this CUDA") + f" (with the torch that pins it: {torch})"
                             + ("; on Windows triton-windows" if windows else "") + "."),
                    commands=[upgrade] if upgrade else []),
             Remedy(summary="Or let Triton run a ptxas its table knows: unset TRITON_PTXAS_PATH "
                    "(its bundled ptxas), or point it (on Windows, CUDA_PATH) at a CUDA toolkit "
                    "it knows" + (" (12.6 or older)" if need == "3.3" else "") + ".")]
    return [Signal("triton_ptx_version", Category.VERSION_CONFLICT, said,
                   [ctx.quote(hit[0])], NAMED, fixes, details={"source": SOURCE})]


# Triton links the launcher it compiles against the driver's libcuda.so, found by `ldconfig -p`
# unless TRITON_LIBCUDA_PATH names the folder (triton/backends/nvidia/driver.py libcuda_dirs() in
# the 3.1.0 to 3.5.0 wheels; its own assert: "libcuda.so cannot found!"); the linker's words when
# it is not there, and ldconfig itself missing from the process's PATH
_LIBCUDA = re.compile(r"cannot find -lcuda\b|libcuda\.so cannot found|No such file or directory: "
                      r"'(?:/sbin/)?ldconfig'")


def libcuda(ctx: Context) -> List[Signal]:
    hit = ctx.first(_LIBCUDA, ("-lcuda", "libcuda.so cannot", "ldconfig"))
    if hit is None or not ctx.text.containing(("triton", "mamba", "torch", "collect2", "inductor")):
        return []
    ldconfig = "ldconfig'" in ctx.text.lines[hit[0]]
    said = ("Triton looks for the driver's libcuda.so with `ldconfig -p`, and ldconfig is not on "
            "this process's PATH (/sbin, /usr/sbin missing: an IDE's or service's environment)"
            if ldconfig else
            "Triton links each kernel's launcher against the driver's libcuda.so, and the linker "
            "finds none: the driver's library folder is not in the linker cache (containers, WSL, "
            "a driver installed after the cache was built)")
    return [Signal("triton_libcuda", Category.BUILD_TOOLCHAIN, said, [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Tell Triton where libcuda.so.1 is: TRITON_LIBCUDA_PATH names the "
                           "folder (Triton then skips ldconfig); find it with `ldconfig -p` (WSL: "
                           "/usr/lib/wsl/lib). Or refresh the linker cache (sudo /sbin/ldconfig)"
                           + (", or put /sbin and /usr/sbin on the PATH the program runs with."
                              if ldconfig else "; where only libcuda.so.1 exists, a libcuda.so "
                              "symlink beside it lets the linker take it."),
                           commands=["/sbin/ldconfig -p",
                                     "export TRITON_LIBCUDA_PATH=/usr/lib/x86_64-linux-gnu"])],
                   details={"source": "triton release wheels' triton/backends/nvidia/driver.py "
                                      "(libcuda_dirs, TRITON_LIBCUDA_PATH)"})]


# Triton builds a small C launcher per kernel with the host C compiler: CC, else one found on PATH
# (triton/runtime/build.py in the 3.5.0 wheel, triton/common/build.py in 2.1.0: "Failed to find C
# compiler. Please specify via CC environment variable.")
_NO_CC = re.compile(r"Failed to find C compiler\. Please specify via CC environment variable")


# Inductor's C++ compiler check (torch/_inductor/exc.py InvalidCxxCompiler in 2.13.0: "Compiler:
# {compiler} is not found.", raised by cpp_builder.check_compiler_exist_windows when `cl /help`
# cannot start: MSVC's environment is not active in this shell)
_NO_CXX = re.compile(r"Compiler: (cl|cl\.exe) is not found|No working C\+\+ compiler found in "
                     r"torch\._inductor\.config\.cpp\.cxx")


def no_c_compiler(ctx: Context) -> List[Signal]:
    cxx = ctx.first(_NO_CXX, ("is not found", "no working c++ compiler"))
    if cxx is not None:
        return [Signal("inductor_cxx", Category.BUILD_TOOLCHAIN,
                       "torch.compile's Inductor compiles C++ with MSVC's cl on Windows, and cl "
                       "cannot start in this shell (the Visual Studio C++ build tools are not "
                       "installed, or their environment is not active)", [ctx.quote(cxx[0])],
                       NAMED, [Remedy(summary="Install Visual Studio's \"Desktop development with "
                                      "C++\" build tools, and start the program from an \"x64 Native "
                                      "Tools Command Prompt\" (or after running vcvarsall.bat x64), "
                                      "so that cl.exe is on PATH; or run without torch.compile.",
                                      commands=["where cl"])],
                       details={"source": "torch/_inductor/exc.py (InvalidCxxCompiler), "
                                          "cpp_builder.py (check_compiler_exist_windows), 2.13.0"})]
    hit = ctx.first(_NO_CC, ("failed to find c compiler",))
    if hit is None:
        return []
    windows = on_windows(ctx)
    fix = (Remedy(summary="Install triton-windows (its install steps give the C compiler it "
                  "uses) and, for the embedded Python, its include and libs folders; or run "
                  "without Triton (no torch.compile, attention through PyTorch SDPA).")
           if windows else
           Remedy(summary="Install a C compiler where the program runs, or name one with CC "
                  "(Triton compiles each kernel's launcher with it).",
                  commands=["apt-get install -y build-essential", "export CC=gcc"]))
    return [Signal("triton_cc", Category.BUILD_TOOLCHAIN,
                   "Triton compiles a small C launcher for every kernel with the host C compiler "
                   "(CC, else cc/gcc/clang on PATH), and none is there", [ctx.quote(hit[0])],
                   NAMED, [fix], details={"source": SOURCE.split(";")[0] + "; triton release "
                                          "wheels' triton/runtime/build.py"})]


# Triton's bundled ptxas by release (the wheels' triton/backends/nvidia/bin): 3.2.0 ships only
# CUDA 12.4's ptxas, which has no Blackwell target; 3.3.0 adds ptxas-blackwell (CUDA 12.8) and
# picks it for compute capability 10.0 and up (compiler.py get_ptxas: arch >= 100).
BLACKWELL_FROM = Version("3.3.0")


def before_blackwell(ctx: Context) -> List[Signal]:
    stated = ctx.package("triton", "triton-windows", "pytorch-triton")
    cc = ctx.gpu_cc_exact
    if stated is None or cc is None or cc < Version("10.0") or ctx.gpu is None:
        return []
    try:
        have = Version(stated.value.split("+")[0])
    except InvalidVersion:
        return []
    if have >= BLACKWELL_FROM:
        return []
    windows = on_windows(ctx)
    fix = (Remedy(summary="Install triton-windows 3.3 or newer, the minor your torch pins "
                  "(3.3 for torch 2.7):", commands=[command("pip", "install", "-U",
                                                            "triton-windows<3.4")])
           if windows else
           _torch_with_triton(ctx))
    return [Signal("triton_before_blackwell", Category.GPU_UNSUPPORTED,
                   f"Triton {have} cannot compile for {ctx.gpu[0]} (compute capability {cc}): "
                   "Triton ships its own ptxas, and 3.3.0 is the first release with one for "
                   "Blackwell (ptxas-blackwell, CUDA 12.8)",
                   dedupe([stated.quote, ctx.gpu[2]]), IMPLIED,
                   [fix, Remedy(summary="Meanwhile, run without Triton kernels: no "
                                "torch.compile, SDPA instead of Triton-based attention.")],
                   details={"source": "triton 3.2.0/3.3.0 release wheels: backends/nvidia/bin"})]


def _torch_with_triton(ctx: Context) -> Remedy:
    """A torch whose build has kernels for the GPU: its wheel pins a Triton that knows it."""
    fitting = r.torch_for_cuda(ctx, 12) or r.torch_for_cuda(ctx, 13)
    return Remedy(summary="Install Triton 3.3 or newer with a torch that pins it and has kernels "
                  "for this GPU (torch 2.7 pins triton 3.3 and its CUDA 12.8 build has sm_120): "
                  + (fitting.summary if fitting else "torch 2.7 or newer."),
                  commands=fitting.commands if fitting else [])


# Triton's own C++ asserting while it compiles a kernel: an assert in its MLIR passes
# ("python: /project/lib/Analysis/Allocation.cpp:43: ... mlir::triton::getCvtOrder(...): Assertion
# `...' failed."; /project is where Triton's release wheels are built). The kernel's source is
# legal: this Triton release cannot lower it for this GPU with these launch options.
_COMPILER_ASSERT = re.compile(r"(?:/project/lib/|/lib/(?:Analysis|Dialect|Conversion)/)[\w/]+\."
                              r"cpp:\d+:[^\n]{0,400}(?:mlir::triton|triton::)[^\n]{0,600}Assertion"
                              r"|mlir::triton::[^\n]{0,600}Assertion `[^\n]{0,300}' failed")


# The same compiler aborting rather than asserting: LLVM's llvm_unreachable ("UNREACHABLE executed
# at /project/lib/Dialect/TritonGPU/Transforms/HoistTMEMAlloc.cpp:418!") and report_fatal_error
# ("LLVM ERROR: Unsupported rounding mode for conversion.", after "Unsupported conversion from f16
# to f16": lib/Conversion/TritonGPUToLLVM/ElementwiseOpToLLVM.cpp, triton-lang/triton#2795).
_COMPILER_ABORT = re.compile(r"UNREACHABLE executed at [^\n]{0,200}(?:/project/lib/|/lib/(?:Analysis|"
                             r"Dialect|Conversion)/)|^LLVM ERROR: (?!Can't find libdevice)(.{4,200})")
# Triton's IR dumped, its compiler's frames or passes, or its own words: ElementwiseOpToLLVM.cpp's
# "Unsupported conversion from", and "PassManager::run failed" (its MLIR pass manager, raised in
# its compile stages: triton/backends/nvidia/compiler.py make_ttir/make_ttgir)
_TRITON_IR = ("ttg.", "tt.func", "ttgir", "ttir", "unsupported conversion from",
              "passmanager::run failed", "triton/compiler", "triton\\compiler", "triton/backends",
              "triton\\backends", "triton.compiler", "tritongpu")
# Triton's README, Compatibility: "Supported Hardware: NVIDIA GPUs (Compute Capability 8.0+)".
_TRITON_FLOOR = Version("8.0")


def compiler_assert(ctx: Context) -> List[Signal]:
    hit = ctx.first(_COMPILER_ASSERT, ("assertion",))
    if hit is None:
        hit = ctx.first(_COMPILER_ABORT, ("unreachable executed", "llvm error"))
        if hit is None or not ctx.text.containing(_TRITON_IR):
            return []
    stated = ctx.package("triton", "pytorch-triton", "triton-windows")
    have = f"Triton {stated.value}" if stated is not None else "this Triton"
    gpu = f" on {ctx.gpu[0]}" if ctx.gpu else ""
    old = ctx.gpu_cc is not None and ctx.gpu_cc < _TRITON_FLOOR
    remedies = [Remedy(summary="Upgrade Triton to a newer release (with the torch that pins "
                       "it: torch's wheel requires one Triton) or go back to the release "
                       "before; or drop the autotune configs that trigger it (often "
                       "num_warps=8 or 16) in the package that owns the kernel.")]
    if old:
        remedies.append(Remedy(summary="Or keep Triton off this GPU: run without torch.compile "
                               "and the package's Triton kernels (its eager or CUDA path), in "
                               "fp32 where it offers one."))
    floor = (f"; Triton supports NVIDIA GPUs of compute capability {_TRITON_FLOOR} and newer "
             "(its README), and its code generation below that is untested") if old else ""
    # below Triton's floor the GPU is the cause; above it, that Triton release
    return [Signal("triton_compiler_assert", Category.GPU_UNSUPPORTED if old else
                   Category.VERSION_CONFLICT,
                   f"{have} failed inside its own compiler while lowering a kernel{gpu}: a "
                   "defect of that Triton release for this kernel's launch options (num_warps, "
                   f"block sizes) on this architecture, not an error in the program{floor}",
                   dedupe([ctx.quote(hit[0]), *([stated.quote] if stated else []),
                           *([ctx.gpu[2]] if ctx.gpu else [])]), NAMED, remedies)]
