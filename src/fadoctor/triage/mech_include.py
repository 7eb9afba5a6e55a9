"""A CUDA extension's source that no longer compiles because it uses a standard name without the
`#include` that declares it (pure). Its older toolkit or compiler headers included that header
for it, newer ones do not: CUDA 12's Thrust and CUB trimmed what their headers pull in, so
simple-knn's FLT_MAX (<cfloat>) and thrust::sequence (<thrust/sequence.h>) stopped compiling.
Every compiler says it its own way: nvcc's front end 'identifier "FLT_MAX" is undefined' and
'namespace "thrust" has no member "sequence"', gcc's "'FLT_MAX' was not declared in this scope"
(and, for names it knows, its own "did you forget to '#include <cfloat>'?"), clang's "use of
undeclared identifier 'FLT_MAX'", MSVC's "C2065: 'FLT_MAX': undeclared identifier". The header
for each name is data/std_headers.yaml's, generated from the compiler's own headers and CUDA's
Thrust (tools/gen_std_headers.py). Also nvcc refusing a C++ standard it predates."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from fadoctor.report import Category, Remedy
from fadoctor.triage import data_yaml
from fadoctor.triage.context import Context
from fadoctor.triage.mech_symbols import package_in
from fadoctor.triage.signal import NAMED, Signal, dedupe

# gcc quotes with typographic quotes in a UTF-8 locale, straight ones otherwise
_O, _C = "['\u2018]", "['\u2019]"
# the compiler naming the header itself: gcc 8+ ("did you forget to '#include <cfloat>'?") and
# gcc 9+ ("this is probably fixable by adding '#include <cfloat>'")
_GCC_HINT = re.compile(rf"{_O}(?:std::|thrust::)?(\w+){_C} is defined in header {_O}<([\w./]+)>"
                       rf"{_C}; (?:did you forget|this is probably fixable)")
# a name the compiler does not know (the group not named s*), and the namespace it was looked up
# in (the group named s*; none: the global one)
_UNDECLARED = re.compile("|".join((
    r"identifier \"(?P<a>\w+)\" is undefined",                                    # nvcc (EDG)
    r"namespace \"(?P<sb>std|thrust)\" has no member (?:class )?\"(?P<b>\w+)\"",     # nvcc (EDG)
    rf"{_O}(?P<c>\w+){_C} was not declared in this scope",                          # gcc
    rf"{_O}(?P<d>\w+){_C} is not a member of {_O}(?P<sd>std|thrust){_C}",             # gcc
    rf"{_O}(?P<e>\w+){_C} does not name a type",                                    # gcc
    r"use of undeclared identifier '(?P<f>\w+)'",                                  # clang
    r"no (?:type |template )?named '(?P<g>\w+)' in namespace '(?P<sg>std|thrust)'",  # clang
    r"C2065: '(?P<h>\w+)': undeclared identifier",                                 # MSVC
    r"C2039: '(?P<i>\w+)': is not a member of '(?P<si>std|thrust)'")))            # MSVC
_NEEDLES = ("is undefined", "has no member", "not declared in this scope", "is not a member",
            "does not name a type", "undeclared identifier", "in namespace '")
# the source file the compiler names on the error's line: nvcc/MSVC "file.cu(90): error",
# gcc/clang "file.cu:90:12: error"
_FILE = re.compile(r"([^\s\\/:\"'(]+\.(?:cu|cuh|cpp|cc|cxx|c|h|hpp|hxx))(?:\(\d+\)|:\d+)")


@lru_cache(maxsize=1)
def _tables() -> Dict[str, Dict[str, str]]:
    loaded = data_yaml.load(data_yaml.path("std_headers.yaml"))
    return {key: loaded[key] for key in ("c", "std", "thrust")}


def header_for(name: str, space: Optional[str]) -> Optional[str]:
    """The header that declares `name` in namespace `space` (None: a C name or macro)."""
    tables = _tables()
    if space == "thrust":
        return tables["thrust"].get(name)
    if space == "std":
        return tables["std"].get(name) or tables["c"].get(name)
    return tables["c"].get(name)


def _undeclared(found: re.Match[str]) -> Tuple[str, Optional[str]]:
    """The name a compiler's message names, and its namespace (the groups named s*)."""
    groups = found.groupdict()
    name = next(v for k, v in groups.items() if not k.startswith("s") and v)
    return name, next((v for k, v in groups.items() if k.startswith("s") and v), None)


def _missing(ctx: Context) -> Optional[Tuple[int, str, str]]:
    """The first line where a compiler names a standard name it does not know: (line, name as
    written, header)."""
    hint = ctx.first(_GCC_HINT, ("is defined in header",))
    best: Optional[Tuple[int, str, str]] = (hint[0], hint[1].group(1), f"<{hint[1].group(2)}>") \
        if hint else None
    for index, found in ctx.find(_UNDECLARED, _NEEDLES):
        if best is not None and index >= best[0]:
            break
        name, space = _undeclared(found)
        header = header_for(name, space)
        if header:
            best = (index, f"{space}::{name}" if space else name, header)
            break
    return best


def missing_include(ctx: Context) -> List[Signal]:
    found = _missing(ctx)
    if found is None:
        return []
    index, name, header = found
    line = ctx.text.lines[index]
    source = _FILE.search(line)
    where = source.group(1) if source else "the source file the error names"
    package = package_in(ctx, line)
    whose = f"{package}'s " if package else "the extension's "
    return [Signal("missing_include", Category.BUILD_TOOLCHAIN,
                   f"{whose}source uses {name} without including {header}, which declares it: "
                   "the toolkit or compiler headers it was written against included that "
                   "header for it, the ones building it now do not",
                   dedupe([ctx.quote(index)]), NAMED,
                   [Remedy(summary=f"Add `#include {header}` at the top of {where} (with the "
                           "other includes) and build again; every file that fails the same "
                           "way needs it. Or build the package's newest release or commit, "
                           "which may include it already.",
                           code=f"#include {header}")],
                   details={"source": "data/std_headers.yaml (tools/gen_std_headers.py: the "
                                      "compiler's own headers and CUDA's Thrust)"})]


# nvcc's own refusal of a -std it predates; the first nvcc accepting each standard:
# Kitware/CMake@01fb8d7:Modules/Compiler/NVIDIA-CUDA.cmake (CMAKE_CUDA14_STANDARD_COMPILE_OPTION
# "-std=c++14" from nvcc 9.0, CMAKE_CUDA17_STANDARD_COMPILE_OPTION "-std=c++17" from 11.0)
_NVCC_STD = re.compile(r"Value 'c\+\+(\d\d)' is not defined for option 'std'")
_FIRST_NVCC = {"14": "9.0", "17": "11.0"}


def nvcc_standard(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NVCC_STD, ("for option 'std'",))
    if hit is None:
        return []
    index, found = hit
    need = found.group(1)
    first = _FIRST_NVCC.get(need)
    cuda = ctx.torch_cuda
    toolkit = (f"CUDA toolkit {cuda.major}.{cuda.minor} (torch's CUDA)" if cuda and
               (first is None or (cuda.major, cuda.minor) >= tuple(int(p) for p in first.split(".")))
               else f"a CUDA toolkit {first} or newer" if first else "a newer CUDA toolkit")
    floor = f"-std=c++{need} needs CUDA {first} or newer" if first else \
        f"this nvcc predates -std=c++{need}"
    return [Signal("nvcc_standard", Category.BUILD_TOOLCHAIN,
                   f"the nvcc that ran does not accept -std=c++{need}, which the build passes: "
                   f"it is older than the C++ standard ({floor})",
                   dedupe([ctx.quote(index), *ctx.quotes("nvcc", "torch")]), NAMED,
                   [Remedy(summary=f"Upgrade nvcc: install {toolkit}, put its bin first on PATH "
                           "and point CUDA_HOME at it, then build again (`nvcc --version` must "
                           "print the new release).",
                           commands=["nvcc --version"])],
                   details={"source": "Kitware/CMake@01fb8d7:Modules/Compiler/NVIDIA-CUDA.cmake"})]
