"""Errors in the pasted text: Python tracebacks and exception lines, tools' error lines, and the
markers of a build log (pip, setup.py, ninja, nvcc) that say what was being done (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Set, Tuple

from fadoctor.triage.observed import Observed, Raised
from fadoctor.triage.text import Pasted

_EXCEPTION = re.compile(
    r"^\s*(?:>\s?)*(?:E\s+)?(?:[A-Za-z_][\w]*\.)*([A-Z]\w*(?:Error|Exception|Warning|Unsupported|Exit))"
    r"\s*:\s?(.*)$")
# CPython's messages (Objects/moduleobject.c: "module '%U' has no attribute '%U'";
# Python/ceval.c: "cannot import name %R from %R"), as the only words of a line, or after
# ComfyUI's own prefix, which logs the exception's text without its class (execution.py:
# logging.error(f"!!! Exception during processing !!! {ex}"))
_BARE_PYTHON = re.compile(r"^\s*(?:!!! Exception during processing !!!\s*)?(?:(module '[\w.]+' has no "
                          r"attribute '\w+')|cannot import name '\w+' from '[\w.]+')")
_TOOL_ERROR = re.compile(r"^\s*(?:ERROR|error|FAILED|fatal error|nvcc fatal|CUDA Error|"
                         r"RuntimeError)\s*:?\s+(.+)$")
# an exception quoted inline in prose: "they fail with `RuntimeError: Unknown keyword ...`"
# ... unless the sentence tells of it as past: "Previously I got `RuntimeError: ...`, now it runs"
_PAST = re.compile(r"\b(?:previously|earlier|used to|was getting|had been getting|no longer)\b",
                   re.I)
_INLINE = re.compile(r"`(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception))\s*:\s?([^`]{8,})`")
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
_BARE_CLASS = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception))\s*$")
_WRAPPER_LOG = re.compile(r"\b(WARNING|ERROR)\b\s*[-:|\]]")

# Build-log markers: what the text shows was going on. Each is (mark, lower-case substrings).
BUILD, NO_ISOLATION, ISOLATED, FROM_SOURCE, DOCKER, WINDOWS, NO_WHEEL = (
    "build", "no_build_isolation", "isolated_build", "from_source", "docker", "windows",
    "no_prebuilt_wheel")
_MARKS: List[Tuple[str, Tuple[str, ...]]] = [
    (BUILD, ("building wheel", "running setup.py", "setup.py install", "setup.py bdist",
             "building wheels for collected", "bdist_wheel", "build_ext", "ninja: build stopped",
             "nvcc fatal", "subprocess-exited-with-error", "failed to build", "failed building wheel",
             "compilation terminated", "building from source", "getting requirements to build",
             "error: command", "cc1plus", "ptxas", "buildextension", "/bin/nvcc ",
             "--generate-dependencies-with-compile",
             # uv's build frontend: astral-sh/uv@0.5.0:crates/uv-build-frontend/src/lib.rs:874
             # ("Build backend failed to determine requirements with `{}`"), @0.12.5: error.rs:46
             # ("The build backend returned an error"), lib.rs:976 ("Call to `{}.build_{}`
             # failed"), uv-distribution-types/src/dist_error.rs:64 ("Failed to download and build")
             "build backend failed", "the build backend returned an error",
             "failed to download and build", ".build_wheel` failed")),
    (NO_ISOLATION, ("--no-build-isolation", "no_build_isolation")),
    (FROM_SOURCE, ("from source", "git+https", "setup.py install", "force_build", "pip install .",
                   "pip install -e .", "python -m pip install .", "building from source",
                   "install from source")),
    (DOCKER, ("dockerfile", "docker build", "docker run", "container")),
    (WINDOWS, ("c:\\", "win_amd64", "windows", ".dll", "visual studio", "msvc", "cl.exe")),
    (NO_WHEEL, ("precompiled wheel not found", "guessing wheel url")),  # setup.py's own words
]
_ISOLATED = re.compile(r"pip3?\s+install\s+(?:-\S+\s+)*(?:\.|-e\s+\.|git\+\S+|flash[-_]attn\S*)"
                       r"(?!.*--no-build-isolation)")


def read_errors(text: Pasted, seen: Observed) -> None:
    _marks(text, seen)
    build_from = seen.marks[BUILD].quote.line if BUILD in seen.marks else None
    frames: List[str] = []
    in_traceback = False
    done: Set[str] = set()
    for index, (line, low) in enumerate(zip(text.lines, text.lower_lines)):
        if ":" not in line and 'File "' not in line and "killed" not in low \
                and "has no attribute" not in low and "cannot import name" not in low:
            # `assert x` with no message: the class alone under the frames, the source above it
            bare = _BARE_CLASS.match(line) if "Error" in line or "Exception" in line else None
            if bare is not None and (in_traceback or any(
                    'File "' in above for above in text.lines[max(0, index - 4):index])):
                shown = frames if in_traceback else [m.group(1) for m in map(
                    _FRAME.match, text.lines[max(0, index - 40):index]) if m]
                source = next((above.strip() for above in reversed(text.lines[max(0, index - 4):
                                                                              index])
                               if above.strip().strip("^~ ")), "")  # not 3.11's ^^^^ markers
                seen.raised.append(Raised(bare.group(1), source, text.quote(index), index,
                                          frames=list(shown)))
                in_traceback = False
            continue
        if "traceback (most recent call last)" in low:
            in_traceback, frames = True, []
            seen.kinds.add("traceback")
            continue
        if in_traceback:
            frame = _FRAME.match(line)
            if frame:
                frames.append(frame.group(1))
                continue
        raised = _raised(line, low) if line not in done else None
        if raised is None:
            continue
        done.add(line)  # the same error line again adds nothing
        kind, message = raised
        seen.kinds.add("build log" if BUILD in seen.marks else "error messages")
        seen.raised.append(Raised(kind, message.strip(), text.quote(index), index,
                                  in_build=build_from is not None
                                  and build_from <= text.numbers[index],
                                  frames=list(frames) if in_traceback else []))
        if in_traceback and kind not in ("log", "error"):
            in_traceback = False


def _raised(line: str, low: str) -> Optional[Tuple[str, str]]:
    if ":" in line:
        found = _EXCEPTION.match(line)
        if found:
            return found.group(1), found.group(2)
        inline = _INLINE.search(line) if "`" in line else None
        if inline and not _PAST.search(line[:inline.start()]):
            return inline.group(1), inline.group(2)
    bare = _BARE_PYTHON.match(line) if ("has no attribute" in low or "cannot import name" in low) \
        else None
    if bare is not None:  # Python's own wording, retold without its exception class (a title)
        return ("AttributeError" if bare.group(1) else "ImportError"), \
            bare.group(0).replace("!!! Exception during processing !!!", "").strip()
    if any(w in low for w in ("error", "failed", "fatal")):
        tool = _TOOL_ERROR.match(line)
        if tool:
            return "error", tool.group(1)
    if ("warning" in low or "error" in low) and _WRAPPER_LOG.search(line):
        return "log", line.strip()
    if low.strip() in ("killed", "killed.") or low.rstrip().endswith(" killed"):
        return "error", line.strip()
    return None


def _marks(text: Pasted, seen: Observed) -> None:
    for mark, needles in _MARKS:
        found = text.containing(needles, first=True)
        if found:
            seen.mark(mark, text.quote(found[0]))
    for index in text.containing(("pip install", "pip3 install")):
        low = text.lines[index].lower()
        if _ISOLATED.search(low) and "--no-build-isolation" not in low:
            seen.mark(ISOLATED, text.quote(index))
            break
