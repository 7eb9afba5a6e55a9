"""torch's C++ ABI as a report states it, and the versions a Python session prints (pure)."""

from __future__ import annotations

import re
from typing import Optional, Tuple

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


# A Python session's answer: `>>> torch.__version__` (or IPython's `In [2]: torch.__version__`),
# its repr on the next line ('1.14.0.dev20221110', or `Out[2]: '2.1.0'`)
_REPL_ASKED = re.compile(r"^\s*(?:>>>|In \[\d+\]:)\s*([A-Za-z_]\w{0,40})\.__version__\s*$")
_REPL_ANSWER = re.compile(r"^\s*(?:Out\[\d+\]:\s*)?['\"]([0-9][\w.+-]{0,60})['\"]\s*$")


def repl_versions(text: Pasted, seen: Observed) -> None:
    for index in text.containing(("__version__",)):
        asked = _REPL_ASKED.match(text.lines[index])
        answer = _REPL_ANSWER.match(text.lines[index + 1]) \
            if asked is not None and index + 1 < len(text.lines) else None
        if asked is None or answer is None:
            continue
        name, version = asked.group(1), answer.group(1)
        if name == "torch":
            seen.state(o.TORCH, version, text.quote(index + 1), TOOL)
        seen.package(name.replace("_", "-"), version, text.quote(index + 1))


# `transformers-cli env` (the issue template of transformers and many HF projects):
# "- `transformers` version: 4.34.0", "- PyTorch version (GPU?): 2.1.0+cu121 (True)"
_HF_ENV = re.compile(r"^\s*-\s*`?([A-Za-z][\w.-]{0,40})`?\s+version(?:\s*\((?:GPU|CPU)\?\))?:"
                     r"\s*(\d+(?:\.\d+){1,3}(?:[\w.+-]{0,30})?)")


def hf_env(line: str) -> Optional[Tuple[str, str]]:
    """(name, version) of one line of `transformers-cli env`."""
    found = _HF_ENV.match(line)
    return (found.group(1), found.group(2)) if found else None
