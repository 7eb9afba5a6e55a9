"""The package is installed, but into another Python than the one that runs the program: pip says
"Requirement already satisfied: flash-attn in C:\\python312\\lib\\site-packages" while the program
says flash_attn is not installed (transformers' "the package flash_attn seems to be not
installed", Python's "No module named 'flash_attn'"). A bare `pip` is the first one on PATH; an
application with its own interpreter (ComfyUI's python_embeded, a venv, conda) needs that
interpreter's pip (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, LOGGED, Signal

# pip's words (pypa/pip src/pip/_internal/resolution/legacy and resolvelib reporters:
# "Requirement already satisfied: {req} in {location} ({version})")
_SATISFIED = re.compile(r"Requirement already satisfied: (flash[-_]attn|flash_attn_3|xformers|"
                        r"sageattention|triton|bitsandbytes|vllm|flashinfer(?:-python)?)\b"
                        r"[^\n]{0,40}? in (\S{3,300}?)(?: \(([\w.+]{1,40})\))?\s*$", re.I)
# the program not finding it: transformers (utils/import_utils.py and modeling_utils.py: "the
# package flash_attn seems to be not installed"), Python's import error
_MISSING = re.compile(r"package (flash_attn|xformers|sageattention|triton)\w* seems to be not "
                      r"installed|No module named '(flash_attn|xformers|sageattention|triton|"
                      r"bitsandbytes|vllm|flashinfer)\w*'", re.I)
# transformers' summary line, the reason cut off (then a weaker finding)
_TOGGLED = re.compile(r"FlashAttention2 has been toggled on, but it cannot be used")
_OWN_PYTHON = re.compile(r"python_embed{1,2}ed|\\venv\\|/venv/|\.venv|envs[\\/]\w+|"
                         r"Stability ?Matrix|conda", re.I)


def other_interpreter(ctx: Context) -> List[Signal]:
    missing = ctx.first(_MISSING, ("not installed", "no module named"))
    summary = missing is None
    if missing is None:
        missing = ctx.first(_TOGGLED, ("toggled on",))
        if missing is None:
            return []
    wanted = "flash_attn" if summary else \
        (missing[1].group(1) or missing[1].group(2)).lower().replace("-", "_")
    for index, found in ctx.find(_SATISFIED, ("requirement already satisfied",)):
        name = found.group(1).lower().replace("-", "_")
        if name != wanted and not (wanted == "flash_attn" and name.startswith("flash_attn")):
            continue
        where, version = found.group(2), found.group(3)
        own = ctx.first(_OWN_PYTHON, ("embed", "venv", "matrix", "conda", "envs"))
        app = " (here it has its own: " + own[1].group(0) + ")" if own else ""
        package = found.group(1)
        return [Signal("other_interpreter", Category.NOT_INSTALLED,
                       f"{package}{f' {version}' if version else ''} is installed in {where}, "
                       f"but the program runs another Python that does not have it: the bare "
                       f"`pip` that ran belongs to a different interpreter",
                       [ctx.quote(missing[0]), ctx.quote(index)], HINTED if summary else LOGGED,
                       [Remedy(summary=f"Install it with the interpreter that runs the program{app}: "
                               "`<that python> -m pip install ...` (ComfyUI portable: "
                               "python_embeded\\python.exe -m pip; a venv: activate it first), "
                               "with a wheel built for that interpreter's torch, CUDA and Python. "
                               "Inside the program, sys.executable names it.")])]
    return []


# The same told in prose: "I have installed sage attention globally, but it still says I don't
# have it": an app that runs its own Python (run.bat's venv, a portable build's embedded Python)
# does not see what the system Python installed.
_GLOBAL = re.compile(r"\binstall(?:ed)?\b[^\n]{0,60}\b(?:globally|system[- ]wide|in (?:the|my) "
                     r"(?:system|global|base) (?:python|environment))\b", re.I)
_STILL = re.compile(r"\bstill\b[^\n]{0,60}\b(?:says?|shows?|saying|not (?:found|installed|detected)|"
                    r"don'?t have|doesn'?t (?:find|see|detect))", re.I)


def installed_elsewhere(ctx: Context) -> List[Signal]:
    told = ctx.first(_GLOBAL, ("globally", "system", "global", "base"))
    if told is None or (_STILL.search(ctx.text.lines[told[0]]) is None
                        and ctx.first(_STILL, ("still",)) is None):
        return []
    return [Signal("other_interpreter", Category.NOT_INSTALLED,
                   "the package was installed into the system's Python, and the program runs "
                   "another one (its venv, or a portable build's embedded Python), which does "
                   "not see it", [ctx.quote(told[0])], HINTED,
                   [Remedy(summary="Install it with the Python the program runs: activate the "
                           "app's virtual environment (venv\\Scripts\\activate, or the app's "
                           "environment script) or call its interpreter directly "
                           "(python_embeded\\python.exe -m pip install ... in a portable build), "
                           "then check with that interpreter's -m pip show.")])]
