"""Reading Itanium C++ mangled names: PyTorch's namespaces and the std::string ABI (pure)."""

from __future__ import annotations

import re
from typing import Collection, Iterable, Optional

_TORCH_NAMESPACES = ("3c10", "2at", "5torch", "6caffe2")


def is_torch_symbol(symbol: str) -> bool:
    """A symbol in one of PyTorch's C++ namespaces (c10, at, torch, caffe2)."""
    body = re.sub(r"^_Z(?:T[VIS])?N?K?", "", symbol)
    return body.startswith(_TORCH_NAMESPACES)


def string_abi(symbol: str) -> Optional[int]:
    """Which C++ ABI the std::string in a mangled name belongs to: 1 (C++11), 0 (old), or None.

    C++11: `NSt7__cxx1112basic_string` in a parameter, or the `[abi:cxx11]` tag `B5cxx11` that
    marks a string the parameters do not show (a return type: `torch::autograd::Node::name()`).
    Old: the abbreviation `Ss`. Identifiers (a length, then that many characters) are skipped
    whole, so an `Ss` inside a name does not count; digits that are no length — a substitution
    `S2_`, a template parameter `T0_`, a constructor `C2`, a destructor `D1`, just after that
    letter — are stepped over, else they would swallow the `Ss` that follows them.
    """
    if "__cxx11" in symbol or "B5cxx11" in symbol:
        return 1
    i, after_name = 0, False
    while i < len(symbol):
        if symbol[i].isdigit():
            j = i
            while j < len(symbol) and symbol[j].isdigit():
                j += 1
            if not after_name and i > 0 and symbol[i - 1] in "STCD":
                i = j  # an index, not a length
            else:
                i, after_name = j + int(symbol[i:j]), True
            continue
        if symbol.startswith("Ss", i):
            return 0
        i, after_name = i + 1, False
    return None


def binary_string_abi(symbols: Iterable[str]) -> Optional[int]:
    """The C++ ABI a binary was built with, from the std::strings of the symbols it imports.

    The first symbol that tells decides: a binary is compiled with one ABI throughout."""
    for symbol in symbols:
        abi = string_abi(symbol)
        if abi is not None:
            return abi
    return None


# Namespaces whose symbols live in torch's GPU libraries (libc10_cuda, libtorch_cuda).
GPU_NAMESPACE = re.compile(r"^_ZN?K?(?:3c104cuda|3c103hip|2at4cuda|2at3hip|5torch4cuda|3c1011cuda)")
_GPU_LIBRARY = re.compile(r"^lib(c10_cuda|c10_hip|torch_cuda\w*|torch_hip)\.so$")


def follows_from(name: str, version: Optional[str], missing_libraries: Collection[str]) -> bool:
    """Whether a missing symbol is a consequence of a missing library: its version names that
    library, or it lives in torch's GPU libraries and one of them is missing."""
    if version is not None and version in missing_libraries:
        return True
    return bool(GPU_NAMESPACE.match(name)) and any(_GPU_LIBRARY.match(lib) for lib in missing_libraries)
