"""The host GCC against nvcc and torch: nvcc's gate on a newer one and torch's C++17 floor
(`compiler`); and a host GCC newer than nvcc handles, shown not by nvcc's own gate (the catalog's
cudahost-001) but by nvcc's front end failing inside libstdc++'s headers:
"/usr/include/c++/16.1.1/type_traits(393): error: identifier "char8_t" is undefined" — the EDG
"file(line): error:" form is nvcc's, and the header path carries the GCC release. The newest GCC
each CUDA release's nvcc accepts is the catalog's (crt/host_config.h at each nvcc release,
cudahost-001's limits) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.catalog_data import entries
from fadoctor.triage.context import Context
from fadoctor.triage.mech_build import build_context, prebuilt
from fadoctor.triage.signal import LOGGED, NAMED, Signal, dedupe

_HEADER_ERROR = re.compile(r"/include/c\+\+/(\d+)(?:\.\d+)*/[\w/.+-]+\(\d+\): error:")


def _limits() -> Tuple[Tuple[str, str, str], ...]:
    return next((e.limits for e in entries() if e.id == "cudahost-001"), ())


def _cuda(release: str) -> str:
    return ".".join(release.split("==")[-1].split(".")[:2])


def newer_gcc(ctx: Context) -> List[Signal]:
    hit = ctx.first(_HEADER_ERROR, ("/include/c++/",))
    if hit is None:
        return []
    gcc = int(hit[1].group(1))
    limits = _limits()
    below = max((int(top) for _, _, top in limits if int(top) < gcc), default=None)
    first: Optional[str] = next((_cuda(a) for a, _, top in limits if int(top) >= gcc), None)
    fixes: List[Remedy] = []
    if below is not None:
        fixes.append(Remedy(summary=f"Build the CUDA code with gcc {below} as nvcc's host "
                            f"compiler (install it beside gcc {gcc}): CC/CXX, CMake's "
                            "CMAKE_CUDA_HOST_COMPILER, or nvcc's -ccbin.",
                            commands=[f"export CC=gcc-{below} CXX=g++-{below}",
                                      f"export CUDAHOSTCXX=/usr/bin/g++-{below}",
                                      f"export NVCC_PREPEND_FLAGS='-ccbin /usr/bin/g++-{below}'"]))
    if first is not None:
        fixes.append(Remedy(summary=f"Or keep gcc {gcc}: CUDA {first} is the first release read "
                            f"whose nvcc accepts it (crt/host_config.h)."))
    return [Signal("host_gcc_newer", Category.BUILD_TOOLCHAIN,
                   f"nvcc fails inside gcc {gcc}'s C++ headers: that GCC is newer than this "
                   "nvcc handles as its host compiler",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("nvcc", "gcc")]), LOGGED, fixes)]


# nvcc's own gate on a newer host gcc, and an older gcc than torch's C++17 headers need
_GCC_NEW = re.compile(r"unsupported G(?:NU|UN) version ?! ?gcc versions? later than (\d+)(?:\.\d+)? are "
                      r"not supported")
# the toolkit whose host_config.h refused: its folder names its version ("/opt/cuda-8.0/bin/..//
# include/host_config.h"); another toolkit the report means (its own CUDA path, torch's CUDA)
# is the one the build should have found
_HOST_CONFIG = re.compile(r"((?:/[\w.+-]+)*/cuda-(\d{1,2}\.\d))/(?:bin/\.\./+)?(?:targets/[\w-]+/)?"
                          r"include/(?:crt/)?host_config\.h")
_CUDA_NAMED = re.compile(r"\bcuda[-_ ]?(\d{1,2}\.\d)\b", re.I)
_GCC_OLD = re.compile(r"too old version of GCC|requires? (?:at least )?(?:gcc|g\+\+) ?(\d+)|"
                      r"C\+\+17 (?:or later )?(?:compatible )?compiler is required|"
                      # C++17 headers libstdc++ gained in gcc 8 (gcc 7 has only
                      # <experimental/filesystem>): GCC's C++17 library status table
                      r"fatal error: (?:filesystem|charconv): No such file", re.I)


def compiler(ctx: Context) -> List[Signal]:
    new = ctx.first(_GCC_NEW, ("unsupported gnu version", "unsupported gun version"))
    if new is not None:
        top = new[1].group(1)
        other = _other_toolkit(ctx)
        return [Signal("compiler", Category.BUILD_TOOLCHAIN,
                       f"the host compiler is newer than this nvcc supports (gcc {top} at most)"
                       + (f", and that nvcc is CUDA {other[1]}'s while the report means CUDA "
                          f"{other[2]}: the build found the older toolkit" if other else ""),
                       dedupe([ctx.quote(new[0]), *ctx.quotes("gcc", "nvcc")]), NAMED,
                       r.keep([_use_toolkit(other) if other else None,
                               Remedy(summary=("Or build" if other else "Build")
                                      + f" with gcc {top} (install it beside the default one).",
                                      commands=[f"export CC=gcc-{top} CXX=g++-{top}",
                                                f"export NVCC_PREPEND_FLAGS='-ccbin "
                                                f"/usr/bin/g++-{top}'"]),
                               prebuilt(ctx)]))]
    old = ctx.first(_GCC_OLD, ("gcc", "c++17", "g++", "filesystem:", "charconv:"))
    if old is None or not build_context(ctx, old[0]):
        return []
    return [Signal("compiler", Category.BUILD_TOOLCHAIN,
                   "the host compiler is too old for torch's C++17 headers",
                   dedupe([ctx.quote(old[0]), *ctx.quotes("gcc")]), NAMED,
                   r.keep([Remedy(summary="Build with gcc 9 or newer (torch's extensions need "
                                  "C++17).", commands=["export CC=gcc-11 CXX=g++-11"]),
                           _cluster_gcc(ctx), prebuilt(ctx)]))]


def _other_toolkit(ctx: Context) -> Optional[Tuple[str, str, str]]:
    """(the refusing toolkit's folder, its version, the version the report means) where the
    refusing host_config.h is another CUDA's than the one the report names."""
    hit = ctx.first(_HOST_CONFIG, ("host_config.h",))
    if hit is None:
        return None
    folder, version = hit[1].group(1), hit[1].group(2)
    meant = [str(ctx.torch_cuda)] if ctx.torch_cuda is not None else []
    meant += [m.group(1) for line in ctx.text.containing(("cuda",))
              for m in _CUDA_NAMED.finditer(ctx.text.lines[line])]
    other = next((v for v in meant if v != version), None)
    return (folder, version, other) if other is not None else None


def _use_toolkit(other: Tuple[str, str, str]) -> Remedy:
    folder, version, meant = other
    home = folder[:-len(version)] + meant
    return Remedy(summary=f"Point the build at CUDA {meant}, not the CUDA {version} it found "
                  f"first: CUDA_HOME (and CUDACXX, the nvcc CMake takes; CMake's "
                  f"CUDA_TOOLKIT_ROOT_DIR) to {home}, with {home}/bin first on PATH and "
                  f"{home}/lib64 on LD_LIBRARY_PATH, then build again.",
                  commands=[f"export CUDA_HOME={home}", f"export CUDACXX={home}/bin/nvcc",
                            f"{home}/bin/nvcc --version"])


_CLUSTER = ("hpc", "cluster", "slurm", "module load", "login node", "supercomputer")


def _cluster_gcc(ctx: Context) -> Optional[Remedy]:
    """On a shared cluster the system gcc is old and not the user's to replace: a newer one comes
    from its environment modules, or from conda-forge's compiler packages."""
    if not ctx.text.containing(_CLUSTER):
        return None
    return Remedy(summary="On a cluster, load a newer gcc from its environment modules (`module "
                  "avail gcc`, then `module load gcc/<version>` of 9 or newer) before building; "
                  "without one, conda-forge's compilers (gxx_linux-64) install a newer gcc "
                  "into the environment.", commands=["module avail gcc"])
