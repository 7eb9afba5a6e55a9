"""The build cannot find Python's C headers (Python.h): a Linux Python without its -dev package,
or on Windows an embeddable Python with no include\\ folder, which is what Triton hits when it
builds its launcher for torch.compile or SageAttention in ComfyUI's portable build (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, env
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import on_windows, prebuilt, toolkit
from fadoctor.triage.signal import HINTED, LOGGED, NAMED, Signal, dedupe

# gcc's "fatal error: Python.h: No such file or directory", MSVC's "fatal error C1083: Cannot open
# include file: 'Python.h'", TinyCC's (the C compiler triton-windows bundles) "error: include file
# 'Python.h' not found", and a reporter's own "cannot find Python.h"
_PYTHON_H = re.compile(r"Python\.h'?: No such file or directory|Cannot open include file: 'Python\.h'"
                       r"|include file '?Python\.h'? not found"
                       # triton-windows' windows_utils.find_python, finding no libs\pythonXY.lib
                       # beside the interpreter: the same embeddable Python, before it compiles
                       r"|Failed to find Python libs"
                       r"|\b(?:cannot|can'?t|could ?n[o']t|unable to) (?:find|open|locate) "
                       r"'?Python\.h", re.I)
# ComfyUI's portable build and other Windows bundles run CPython's embeddable package, which ships
# without include\ and libs\ (so Triton cannot build its launcher): woct0rdho/triton-windows
# README, "embedded Python"
_EMBEDDED = re.compile(r"python_embed{1,2}ed|Embedded Python\W{0,6}true|embedded python", re.I)

def python_headers(ctx: Context) -> List[Signal]:
    hit = ctx.first(_PYTHON_H, ("python.h", "failed to find python libs"))
    if hit is None:
        return []
    py = f"{ctx.python}" if ctx.python else "3.X"
    if on_windows(ctx):
        return [_windows_headers(ctx, hit[0], py)]
    return [Signal("python_headers", Category.BUILD_TOOLCHAIN,
                   "the build cannot find Python's C headers (Python.h)", [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Install the headers of the Python that builds.",
                           commands=[f"apt-get install python{py}-dev"]), prebuilt(ctx)])]


def _windows_headers(ctx: Context, index: int, py: str) -> Signal:
    quotes = dedupe([ctx.quote(index), *ctx.quotes("python")])
    if ctx.first(_EMBEDDED, ("embed",)) is not None:
        return Signal("python_headers", Category.BUILD_TOOLCHAIN,
                      "the embedded Python (python_embeded) has no include\\ and libs\\ "
                      "folders, so the C compiler (Triton building its launcher for torch.compile "
                      "or SageAttention, or an extension build) finds no Python.h or pythonXY.lib",
                      quotes, NAMED,
                      [Remedy(summary=f"Copy the include and libs folders of a full CPython {py} "
                               "(the same version as python.exe -VV says; triton-windows' releases "
                               "publish them as python_3.X.Y_include_libs.zip) into python_embeded\\, "
                               "as triton-windows' install steps say."),
                       Remedy(summary="Or run without what compiles: no torch.compile node and "
                               "attention through PyTorch SDPA instead of SageAttention.")])
    return Signal("python_headers", Category.BUILD_TOOLCHAIN,
                  "the C compiler finds no Python.h for this Python", quotes, NAMED,
                  [Remedy(summary=f"Build with a full CPython {py} install (the python.org "
                          "installer puts include\\ and libs\\ beside python.exe), not an "
                          "embeddable or store package."), prebuilt(ctx)])


# The linker finding no CUDA library a torch extension links ("ld: cannot find -lcurand",
# "-lcudart"): torch's cpp_extension passes -L$CUDA_HOME/lib64 and -lcudart (plus the op's own
# libraries), so the toolkit CUDA_HOME names lacks them: conda's nvcc package alone (cuda-nvcc)
# without the libraries' development files, or a toolkit without the .so link names.
_NO_LIB = re.compile(r"cannot find -l(cudart|curand|cublas|cublasLt|cusparse|cusolver|cufft|"
                     r"nvrtc|nvToolsExt|cudnn|nccl)\b")


def cuda_library(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_LIB, ("cannot find -l",))
    if hit is None:
        return []
    lib = hit[1].group(1)
    conda = ctx.first(re.compile(r"(?:ana|mini)conda\d?[\\/]|[\\/]envs[\\/]\w+[\\/]bin[\\/]nvcc"),
                      ("conda", "envs"))
    return [Signal("cuda_library", Category.BUILD_TOOLCHAIN,
                   f"the linker finds no lib{lib}.so in the CUDA toolkit the build uses "
                   "(CUDA_HOME's lib64)" + (": a conda environment's nvcc without the CUDA "
                                            "libraries' development files" if conda else ""),
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(conda[0])] if conda else [])]),
                   NAMED if ":" in ctx.text.lines[hit[0]] else LOGGED,
                   [Remedy(summary=f"Point CUDA_HOME at a full CUDA toolkit whose lib64 holds "
                           f"lib{lib}.so (the system's /usr/local/cuda of torch's CUDA major), "
                           "then build again.", commands=[f"ls /usr/local/cuda/lib64/lib{lib}.so",
                                                          "export CUDA_HOME=/usr/local/cuda"]),
                    Remedy(summary="Or, in a conda environment, install the CUDA libraries' "
                           f"development files beside its nvcc (they carry lib{lib}.so), from "
                           "the nvidia channel at the same CUDA version as the nvcc: conda "
                           "install -c nvidia cuda-libraries-dev.")],
                   details={"source": "torch/utils/cpp_extension.py (CUDAExtension: "
                                      "-L{CUDA_HOME}/lib64, -lcudart)"})]


# CMake finding no compiler for a language its project enables ("CMake Error at CMakeLists.txt:
# ... No CMAKE_CXX_COMPILER could be found.", "No CMAKE_CUDA_COMPILER could be found."): CMake's
# compiler detection, in every build that goes through CMake (Transformer Engine, vLLM,
# llama-cpp-python, bitsandbytes' source build).
_CMAKE = re.compile(r"No CMAKE_(C|CXX|CUDA)_COMPILER could be found")


def cmake_compiler(ctx: Context) -> List[Signal]:
    hit = ctx.first(_CMAKE, ("could be found",))
    if hit is None:
        return []
    lang = hit[1].group(1)
    if lang == "CUDA":
        fixes = [Remedy(summary="CMake looks for nvcc through CUDACXX (or CMAKE_CUDA_COMPILER) "
                        "and PATH: point it at the toolkit of torch's CUDA major (and put its bin "
                        "folder first on PATH), then build again.",
                        commands=["export CUDACXX=/usr/local/cuda/bin/nvcc",
                                  "export CUDA_HOME=/usr/local/cuda"])]
    elif on_windows(ctx):
        fixes = [Remedy(summary="Install Visual Studio (or its Build Tools) with the \"Desktop "
                        "development with C++\" workload, and build from its x64 Native Tools "
                        "command prompt, where cl.exe is on PATH.")]
    else:
        fixes = [Remedy(summary="Install a C and C++ compiler (Debian/Ubuntu: build-essential; "
                        "Fedora/RHEL: gcc and gcc-c++), or point CMake at one through CC and "
                        "CXX, then build again.", commands=["sudo apt-get install -y build-essential"])]
    name = {"C": "C", "CXX": "C++", "CUDA": "CUDA"}[lang]
    tool = "nvcc" if lang == "CUDA" else "a C/C++ compiler"
    return [Signal("cmake_compiler", Category.BUILD_TOOLCHAIN,
                   f"CMake found no {name} compiler for the build ({tool} is not installed or "
                   "not on PATH)", [ctx.quote(hit[0])], NAMED, fixes,
                   details={"source": "CMake's compiler detection: \"No CMAKE_<LANG>_COMPILER "
                                      "could be found.\""})]


# MSVC not finding the Windows SDK's headers (corecrt.h, stddef.h, stdlib.h: the Universal CRT's;
# windows.h: its Windows headers): Visual Studio's C++ build tools were installed
# without a Windows SDK, or the build runs outside the developer prompt that puts it on INCLUDE.
# And Thrust refusing a CUB from elsewhere (thrust/system/cuda/config.h: "The version of CUB in
# your include path is not compatible with this release of Thrust. CUB is now included in the
# CUDA Toolkit"): a separate CUB checkout (CUB_HOME, or an -I to it) ahead of the toolkit's.
_UCRT = re.compile(r"Cannot open include file: '(corecrt\.h|corecrt_\w+\.h|stddef\.h|stdlib\.h|"
                   r"windows\.h|stdio\.h)'")
_CUB = re.compile(r"The version of CUB in your include path is not compatible with this release "
                  r"of Thrust")
# no CUB at all: the toolkit the build uses predates 11.0, the first to bundle it (the same
# Thrust message: "CUB is now included in the CUDA Toolkit"), most often a distro's old nvcc
# (/usr/bin/nvcc) found ahead of the toolkit that matches torch
_NO_CUB = re.compile(r"fatal error: cub/cub\.cuh: No such file")


def windows_sdk(ctx: Context) -> List[Signal]:
    out: List[Signal] = []
    hit = ctx.first(_UCRT, ("cannot open include file",))
    if hit is not None:
        out.append(Signal("windows_sdk", Category.BUILD_TOOLCHAIN,
                          f"MSVC cannot find {hit[1].group(1)}, a header of the Windows SDK "
                          "(its C runtime or its Windows headers): the Visual Studio build tools "
                          "were installed without a "
                          "Windows SDK, or the build runs outside the developer prompt that sets "
                          "INCLUDE", [ctx.quote(hit[0])], NAMED,
                          [Remedy(summary="In the Visual Studio Installer, add the \"Windows 11 "
                                  "SDK\" (or Windows 10 SDK) component to the C++ build tools, "
                                  "then build from the \"x64 Native Tools Command Prompt\".")]))
    cub = ctx.first(_CUB, ("version of cub in your include path",))
    if cub is not None:
        out.append(Signal("cub_home", Category.BUILD_TOOLCHAIN,
                          "a separate CUB on the include path (CUB_HOME or an -I to a CUB "
                          "checkout) comes before the CUB that the CUDA toolkit ships, and Thrust "
                          "refuses it", [ctx.quote(cub[0])], NAMED,
                          [Remedy(summary="Unset CUB_HOME (the CUDA toolkit has bundled CUB "
                                  "since 11.0) and drop any -I to a CUB checkout, then build "
                                  "again.")]))
    none = ctx.first(_NO_CUB, ("cub/cub.cuh",)) if cub is None else None
    if none is not None:
        out.append(Signal("cub_missing", Category.BUILD_TOOLCHAIN,
                          "the CUDA toolkit the build uses has no CUB: it is older than CUDA 11.0, "
                          "the first to bundle CUB (most often a distribution's old nvcc in "
                          "/usr/bin ahead of the toolkit that matches torch)",
                          [ctx.quote(none[0])], NAMED,
                          [toolkit(ctx, Version("11.0")),
                           Remedy(summary="Check which nvcc the build finds (`which nvcc`); remove "
                                  "the distribution's old one or put the new toolkit's bin first "
                                  "on PATH.", commands=["which nvcc", "nvcc --version"])]))
    return out


# setuptools running MSVC's compiler that is not on PATH: "error: command 'cl.exe' failed: None"
# (the spawn found no executable), outside a Visual Studio developer prompt; or nvcc's own
# words when it looks for its host compiler: "nvcc fatal   : Cannot find compiler 'cl.exe' in PATH"
_NO_CL = re.compile(r"error: command '(?:[^'\n]{0,200}[\\/])?cl\.exe' failed(?:: None|: No such file|"
                    r" with exit (?:code|status) (?:9009|2147942402))|"
                    r"Cannot find compiler 'cl\.exe' in PATH")


def cl_not_on_path(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_CL, ("cl.exe",))
    if hit is None:
        return []
    return [Signal("cl_not_on_path", Category.BUILD_TOOLCHAIN,
                   "the build ran MSVC's compiler (cl.exe) and Windows found none on PATH: it runs "
                   "outside a Visual Studio developer prompt, or the C++ build tools are missing",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Build from the \"x64 Native Tools Command Prompt for VS\" (or "
                           "after running vcvars64.bat), which puts cl.exe on PATH; or add MSVC's "
                           "bin\\Hostx64\\x64 folder to PATH. Without the Visual Studio Build Tools' "
                           "\"Desktop development with C++\" workload, install it first.")])]


# CUDA_HOME set like a PATH list ("export CUDA_HOME=/usr/local/cuda-10.0:$CUDA_HOME"): torch's
# extension builder takes it as one directory and runs os.path.join(CUDA_HOME, 'bin', 'nvcc')
# (torch/utils/cpp_extension.py _join_cuda_home), so the spawn names a path with colons in it.
_LISTED_HOME = re.compile(r"(?:unable to execute|command) '((/[^':\s]+)(?::/?[^':\s]*)+/bin/nvcc)'")
_HOME_EXPORT = re.compile(r"\bCUDA_HOME=(/[^:\s]+):")


def cuda_home_list(ctx: Context) -> List[Signal]:
    hit = ctx.first(_LISTED_HOME, ("/bin/nvcc",))
    said = ctx.first(_HOME_EXPORT, ("cuda_home=",))
    if hit is None and said is None:
        return []
    first = hit[1].group(2) if hit is not None else said[1].group(1) if said is not None else ""
    quotes = dedupe([ctx.quote(found[0]) for found in (hit, said) if found is not None])
    return [Signal("cuda_home_list", Category.BUILD_TOOLCHAIN,
                   "CUDA_HOME holds a list of directories joined by ':' (set like PATH): torch's "
                   "extension builder takes CUDA_HOME as one directory and looks for "
                   "CUDA_HOME/bin/nvcc, a path that does not exist", quotes,
                   NAMED if hit is not None else HINTED,
                   [Remedy(summary=f"Set CUDA_HOME to the one toolkit directory ({first}), not a "
                           "list, then build again in the same shell.",
                           commands=[command("export", env("CUDA_HOME", first))])])]
