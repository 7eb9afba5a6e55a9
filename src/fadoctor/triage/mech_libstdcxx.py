"""An extension that needs a C++ standard library symbol (std::…) the loaded libstdc++ lacks:
it was compiled by a GCC newer than the libstdc++ the process loads (a conda environment's
older libstdcxx-ng, or an OS upgrade bringing GCC 11 while the env keeps its own), so the loader
finds no definition. Neither torch nor the package's version is at fault: the build's compiler
is (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.signal import NAMED, Signal
from fadoctor.triage.text import Quote

# Itanium C++ ABI: St is ::std:: (abi-substitution), in a nested name (N…St…), a plain function
# (_ZSt), a const member (NK), a vtable, typeinfo or its name (TV, TI, TS)
_STD = re.compile(r"^_Z(?:N|NK|TVN|TIN|TSN)?St\d|^_ZSt\d|^_Z(?:TV|TI|TS)St\d")


def is_std_symbol(symbol: Optional[str]) -> bool:
    return symbol is not None and _STD.match(symbol) is not None


def libstdcxx(owner: Optional[str], binary: str, shown: str,
              quotes: List[Quote]) -> Signal:
    who = owner or binary
    return Signal(
        "libstdcxx_symbol", Category.BUILD_TOOLCHAIN,
        f"{binary} needs {shown} from the C++ standard library, which the libstdc++ this process "
        f"loads does not define: {who} was compiled by a newer GCC than that libstdc++ (an OS "
        "upgrade's GCC, while the environment loads its own older libstdc++)",
        quotes, NAMED,
        [Remedy(summary=f"Rebuild {who} with an older GCC, one whose libstdc++ the environment "
                "loads (the GCC the torch build supports: gcc-10 or gcc-9 on an OS that now "
                "defaults to GCC 11+), from a clean build directory.",
                commands=[command("export", "CC=gcc-10", "CXX=g++-10")]),
         Remedy(summary="Or make the process load a libstdc++ as new as the compiler's: in a conda "
                "environment, update its libstdc++ (conda-forge's libstdcxx-ng), which then "
                "defines every symbol the newer GCC emits.",
                commands=[command("conda", "install", "-c", "conda-forge", "libstdcxx-ng")])])
