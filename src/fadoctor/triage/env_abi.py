"""torch's C++ ABI as a report states it (pure)."""

from __future__ import annotations

import re

from fadoctor.triage import observed as o
from fadoctor.triage.observed import TOOL, Observed
from fadoctor.triage.text import Pasted

# torch's C++ ABI as a report states it: `print(torch._C._GLIBCXX_USE_CXX11_ABI)` and its answer
# (on the line or the next), or torch.__config__.show()'s / cpp_extension's compile flag
# -D_GLIBCXX_USE_CXX11_ABI=N, which cpp_extension sets from torch's own ABI
_ABI_SAID = re.compile(r"_GLIBCXX_USE_CXX11_ABI\)?\s*(?:[:=]|->|is)?\s*(True|False|TRUE|FALSE|true|"
                       r"false)\b")
_ABI_FLAG = re.compile(r"-D_GLIBCXX_USE_CXX11_ABI=([01])\b")
_ABI_NEXT = re.compile(r"^\s*(?:>>>\s*|Out\[\d+\]:\s*)?(True|False|TRUE|FALSE|1|0)\s*$")


def torch_abi(text: Pasted, seen: Observed) -> None:
    for index in text.containing(("_glibcxx_use_cxx11_abi",)):
        line = text.lines[index]
        found = _ABI_SAID.search(line) or _ABI_FLAG.search(line)
        if found is None and "_C._GLIBCXX_USE_CXX11_ABI" in line and index + 1 < len(text.lines):
            found = _ABI_NEXT.match(text.lines[index + 1])
            if found is not None:
                index += 1
        if found is not None:
            value = found.group(1).lower()
            seen.state(o.TORCH_ABI, "true" if value in ("true", "1") else "false",
                       text.quote(index), TOOL)
            return
