"""Generate data/std_headers.yaml: which header declares a standard C/C++ name (FLT_MAX, uint32_t,
memcpy, std::numeric_limits) or a Thrust algorithm (thrust::sequence), so triage can name the
`#include` a CUDA extension's source lacks when a newer toolkit's headers stop including it for
it ('identifier "FLT_MAX" is undefined', 'namespace "thrust" has no member "sequence"').

Read from the toolchain itself, not typed: each standard header is preprocessed by the host
compiler (`-dM -E` for its macros, `-E -P` for its declarations), and a name goes to the header
with the smallest preprocessed text that declares it (the header that defines it, not one that
includes it); Thrust's names are the functions and classes each top-level thrust/*.h declares
in the CUDA toolkit's CCCL headers, a name going to the header named after it where there is
one. Run: python tools/gen_std_headers.py [--cxx g++] [--cuda-include DIR] [--check]."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Set, Tuple

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_fa_api import emit

OUT = Path(__file__).resolve().parents[1] / "data" / "std_headers.yaml"
# the C library's headers as C++ names them (ISO C++ [headers]: the <cname> headers)
C_HEADERS = ("cassert", "cctype", "cerrno", "cfloat", "cinttypes", "climits", "cmath", "csignal",
             "cstdarg", "cstddef", "cstdint", "cstdio", "cstdlib", "cstring", "ctime")
# the C++ library headers whose classes extension sources use
CXX_HEADERS = ("algorithm", "array", "atomic", "chrono", "functional", "iostream", "limits",
               "map", "memory", "mutex", "numeric", "optional", "set", "sstream", "stdexcept",
               "string", "thread", "tuple", "type_traits", "unordered_map", "unordered_set",
               "utility", "vector")
_EXTERN = re.compile(r"\bextern\s+(?:\"C\"\s+)?[\w\s*]*?\b([A-Za-z]\w*)\s*\(")
_TYPEDEF = re.compile(r"\btypedef\s+[^;{}()]*?\b([A-Za-z]\w*)\s*;")
_CLASS = re.compile(r"^\s*(?:class|struct)\s+([a-z]\w*)\s*(?:[:{]|$)", re.M)
# a Thrust header's declarations at column 0 (CCCL's style): "_CCCL_HOST_DEVICE void sequence("
_THRUST_FN = re.compile(r"^(?:_CCCL_HOST_DEVICE\s+|_CCCL_API\s+|inline\s+)*"
                        r"(?:[\w:<>,]+\s+)+?([a-z]\w*)\s*\(", re.M)
_THRUST_CLASS = re.compile(r"^(?:class|struct)\s+([a-z]\w*)\b(?!;)", re.M)
_SKIP = re.compile(r"^(?:return|if|while|for|switch|sizeof|decltype|operator|main)$")


def _run(cxx: str, header: str, *flags: str) -> str:
    source = f"#include <{header}>\n" if header else ""
    return subprocess.run([cxx, "-x", "c++", "-std=c++17", *flags, "-"], input=source,
                          capture_output=True, text=True, check=True).stdout


def _macros(text: str) -> Set[str]:
    return {m.group(1) for m in re.finditer(r"^#define ([A-Za-z]\w*)", text, re.M)}


def standard(cxx: str) -> Tuple[Dict[str, str], Dict[str, str]]:
    """The C names (macros, functions, types) and the std:: classes, each with its header."""
    base = _macros(_run(cxx, "", "-dM", "-E"))
    found: Dict[str, List[Tuple[int, str]]] = {}
    for header in C_HEADERS:
        text = _run(cxx, header, "-E", "-P")
        names = (_macros(_run(cxx, header, "-dM", "-E")) - base) | \
            {m.group(1) for rx in (_EXTERN, _TYPEDEF) for m in rx.finditer(text)}
        for name in names:
            found.setdefault(name, []).append((len(text), f"<{header}>"))
    # a name many headers declare (size_t) comes from the library's shared internals: no one header
    c = {name: min(sizes)[1] for name, sizes in found.items()
         if not name.startswith("_") and len(sizes) < 4}
    std: Dict[str, str] = {}
    for header in CXX_HEADERS:
        text = _run(cxx, header, "-E")
        named = {header} & {m.group(1) for m in _CLASS.finditer(text)}  # <vector>'s vector
        for name in own_classes(text, header) | named:
            if not name.startswith("_") and name not in c:
                std.setdefault(name, f"<{header}>")
    return c, std


def own_classes(text: str, header: str) -> Set[str]:
    """The classes a C++ header defines in its own file (the preprocessor's line markers say
    which file each line is from), not in the internal headers it includes (bits/...)."""
    names: Set[str] = set()
    own = False
    for line in text.splitlines():
        marker = re.match(r'# \d+ "([^"]+)"', line)
        if marker:
            own = marker.group(1).rsplit("/", 1)[-1] == header
        elif own:
            names.update(m.group(1) for m in _CLASS.finditer(line))
    return names


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def thrust(include: Path) -> Dict[str, str]:
    """Each top-level thrust/*.h's functions and classes; a name declared by several goes to the
    header named after it, else the smallest."""
    root = include / "cccl" / "thrust" if (include / "cccl" / "thrust").is_dir() else \
        include / "thrust"
    found: Dict[str, List[Tuple[int, str]]] = {}
    for header in sorted(root.glob("*.h")):
        text = _strip_comments(header.read_text(encoding="utf-8", errors="replace"))
        names = {m.group(1) for rx in (_THRUST_FN, _THRUST_CLASS) for m in rx.finditer(text)}
        for name in names:
            if not _SKIP.match(name):
                found.setdefault(name, []).append((len(text), header.stem))
    return {name: f"<thrust/{name if any(s == name for _, s in sizes) else min(sizes)[1]}.h>"
            for name, sizes in found.items()}


def _version(cxx: str) -> str:
    first = subprocess.run([cxx, "--version"], capture_output=True, text=True,
                           check=True).stdout.splitlines()[0]
    return re.sub(r"\s*\(.*?\)", "", first).strip()


def _thrust_version(include: Path) -> str:
    for path in (include / "cccl" / "thrust" / "version.h", include / "thrust" / "version.h"):
        if path.is_file():
            found = re.search(r"#define THRUST_VERSION (\d+)", path.read_text(encoding="utf-8"))
            if found:
                v = int(found.group(1))
                return f"{v // 100000}.{v // 100 % 1000}.{v % 100}"
    raise SystemExit(f"{include}: no thrust/version.h")


def _sorted(table: Dict[str, str]) -> Dict[str, str]:
    return {k: table[k] for k in sorted(table)}


def render(cxx: str, include: Path) -> str:
    c, std = standard(cxx)
    data = {"source": {"c": f"{_version(cxx)}: each <cname> header preprocessed (-dM -E, -E -P)",
                       "std": f"{_version(cxx)}: each C++ library header preprocessed (-E -P)",
                       "thrust": f"Thrust {_thrust_version(include)} (CUDA toolkit CCCL): "
                                 "thrust/*.h"},
            "c": _sorted(c), "std": _sorted(std), "thrust": _sorted(thrust(include))}
    head = "# Generated by tools/gen_std_headers.py: do not edit.\n"
    return head + yaml.safe_dump(data, sort_keys=False, width=100)


def _nvcc_include() -> Path:
    """CUDA_HOME's include folder, else the toolkit of the nvcc on PATH (whose folder holds
    cuda.h), else /usr/local/cuda's."""
    home = os.environ.get("CUDA_HOME")
    nvcc = shutil.which("nvcc")
    for root in ([Path(home)] if home else []) + \
            ([Path(nvcc).resolve().parent.parent] if nvcc else []) + [Path("/usr/local/cuda")]:
        if (root / "include" / "cuda.h").is_file():
            return root / "include"
    raise SystemExit("no CUDA toolkit found: pass --cuda-include")


def main(argv: Iterable[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cxx", default="g++", help="the host C++ compiler (default g++)")
    parser.add_argument("--cuda-include", type=Path, help="a CUDA toolkit's include folder")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file would change")
    args = parser.parse_args(list(argv))
    return emit(OUT, render(args.cxx, args.cuda_include or _nvcc_include()), args.check)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
