"""A host GCC newer than nvcc handles, shown not by nvcc's own gate (the catalog's cudahost-001)
but by nvcc's front end failing inside libstdc++'s headers: "/usr/include/c++/16.1.1/type_traits
(393): error: identifier "char8_t" is undefined" — the EDG "file(line): error:" form is nvcc's,
and the header path carries the GCC release. The newest GCC each CUDA release's nvcc accepts is
the catalog's (crt/host_config.h at each nvcc release, cudahost-001's limits) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.triage.catalog_data import entries
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

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
