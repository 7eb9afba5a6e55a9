"""data/messages.yaml loaded: each entry's bounded pattern, the cheap word that picks the lines
it runs on, where it lives, the releases that print it, its category and what its captures
state (read once)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Match, Optional, Pattern, Tuple

from fadoctor.report import Category
from fadoctor.triage import data_yaml

if TYPE_CHECKING:
    from fadoctor.triage.context import Context

# Who prints a toolchain message (tools/build_sources.py's prefixes).
TOOLCHAIN = {"pip": "pip's build step", "uv": "uv's build hint", "ninja": "ninja",
             "nvcc": "nvcc", "ptxas": "ptxas", "gcc": "the gcc driver",
             "cudahost": "CUDA's host-compiler check",
             "ld": "the dynamic loader"}
_PACKAGED = Path(__file__).resolve().parent.parent / "data" / "messages.yaml"
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "data" / "messages.yaml"


@dataclass(frozen=True)
class Entry:
    id: str
    printed: str
    regex: str  # the pattern (case-insensitive): compiled at its first use (`pattern`)
    needle: str
    location: str
    first: str
    last: str
    category: Category
    captures: Tuple[Tuple[str, str], ...] = ()  # (placeholder, the fact it states)
    # a wrapper's accepted flash-attn range by its releases: (first tag, last tag, min, max)
    accepts: Tuple[Tuple[str, str, str, str], ...] = ()
    # "" for flash-attention's own checks and wrappers; "named" for a toolchain message a report
    # shows as its cause (tools/build_sources.py); "corroborate": a message a hand-written mechanism
    # reads with more context (torch's, the CUDA runtime's, the build frontends'): it adds its
    # citation to that finding, and stands alone only below it; "note": the same, and alone only a
    # warning (a benign warning, or a wrapper of the error); "defer": a transformers message a hand
    # mechanism reads (mech_wrappers): the catalog says nothing; "wrapped": raised over another
    # error, which a report shows above it: it ranks as a wrapper's message; "logged": a serving
    # framework's line that says why a backend is passed over (then another runs): it corroborates
    # a cause, it does not name a failure
    weight: str = ""
    # the numbers a toolchain message names by release: (first, last, "n[,m]")
    limits: Tuple[Tuple[str, str, str], ...] = ()
    # a requirement the releases state beside the message: (first release, last, requirement)
    requires: Tuple[Tuple[str, str, str], ...] = ()

    @property
    def corroborate(self) -> bool:
        return self.weight in ("corroborate", "note")
    # a `No module named 'cutlass...'`: the nvidia-cutlass-dsl releases whose wheels hold it
    dsl_versions: Tuple[str, ...] = ()
    # a serving framework's choices for its attention backend at the entry's last release
    backends: Tuple[str, ...] = ()
    switch: Tuple[str, ...] = ()  # vLLM: "env" (VLLM_ATTENTION_BACKEND) and/or "cli"
    remedy: str = ""  # the remedy rule recorded with the entry (data/messages.yaml)
    # every other word a matching line holds (lower case): tested before the pattern runs
    words: Tuple[str, ...] = ()

    @cached_property
    def pattern(self) -> Pattern[str]:
        """The entry's pattern, compiled where a report's line may print it: a run tests a few
        of the catalog's hundreds, and compiling them all would take most of a short report's
        time."""
        # a printed form ending in a number ends there: "...only supported on CUDA 11" is not
        # the prefix of a later release's "...on CUDA 11.7 and above"
        ends_in_number = bool(re.search(r"(?<!\\)\d$", self.regex))
        return re.compile(self.regex + (r"(?!\.?\d)" if ends_in_number else ""), re.I)

    @property
    def corroborates(self) -> bool:
        return self.weight == "logged"

    @property
    def source(self) -> str:
        """The id's prefix: fa-csrc, fa-setup, fa-py, fa3, fa3-py, fa4, fa4-import, xformers, vllm-fa,
        torch, c10, cudart, hf, vllm, sglang, sgl-kernel, cutlass-dsl, cudnn, or a toolchain source's
        (TOOLCHAIN)."""
        return self.id.rsplit("-", 1)[0]

    @property
    def printed_label(self) -> str:
        what = _LABELS.get(self.source, "flash-attn's own check")
        return f"{what} \"{self.printed}\""


_LABELS = {"fa3": "FlashAttention-3's check", "fa3-py": "FlashAttention-3's setup",
           "fa4": "flash-attn-4's check", "fa4-import": "an import flash-attn-4 needs",
           "fa-setup": "flash-attn's setup.py",
           "xformers": "xformers' flash-attn check",
           "vllm-fa": "vllm_flash_attn's FA version gate",
           "torch": "torch's check", "c10": "torch's CUDA check (c10)",
           "cudart": "the CUDA runtime's error", "sdpa": "PyTorch SDPA's check",
           "hf": "transformers' flash-attention check",
           "vllm": "vLLM's attention backend choice", "sglang": "SGLang's attention backend",
           "sgl-kernel": "sgl-kernel's flash_attn gate",
           "cutlass-dsl": "an nvidia-cutlass-dsl module",
           "cudnn": "cuDNN's fused-attention check",
           "sage-hdim": "SageAttention's check", "sage-arch": "SageAttention's check",
           "sage-build": "SageAttention's check", "sage-dtype": "SageAttention's check",
           **TOOLCHAIN}


def _needle(printed: str, pattern: str) -> str:
    """The longest literal word the pattern always holds, lower case: the cheap scan that picks the
    lines to match (a pattern may leave out advice the message appends)."""
    core = re.sub(r"\(\?:[^()]*\)\?", "", pattern)  # an optional preface is not always there
    words = [w for w in re.split(r"\{\w+\}|\s", printed) if w and re.escape(w) in core]
    return max(words or [printed], key=len).lower()


_SEPARATOR = r"\s{1,4}"  # between the words of a generated pattern (tools/gen_messages.py)


def _outside_groups(source: str) -> str:
    """The pattern with each group and character class made one NUL: a word in an alternative,
    an optional group or a class is not always there."""
    out, depth, i = [], 0, 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            out.append(source[i:i + 2] if depth == 0 else "")
            i += 2
            continue
        if char == "[" and depth == 0:
            end = i + 1 + (source[i + 1:i + 2] == "]")
            while end < len(source) and source[end] != "]":
                end += 2 if source[end] == "\\" else 1
            out.append("\0")
            i = end + 1
            continue
        if char == "(":
            out.append("\0" if depth == 0 else "")
            depth += 1
        elif char == ")":
            depth -= 1
        elif depth == 0:
            out.append(char)
        i += 1
    return "".join(out)


def _words(printed: str, source: str, needle: str) -> Tuple[str, ...]:
    """The printed words (ASCII) the compiled pattern holds as a whole token between separators,
    outside every group and with no quantifier after it: a line the pattern matches holds each
    (its case aside). Hand-written patterns without the separator give none."""
    tokens = set(_outside_groups(source).split(_SEPARATOR))
    words = {w.lower() for w in re.split(r"\{\w+\}|\s", printed)
             if w and w.isascii() and re.escape(w) in tokens} - {needle}
    return tuple(sorted(words, key=lambda w: (-len(w), w)))  # the longest, rarest, first


def _as_quoted(pattern: str) -> str:
    """A catalogued pattern as reports quote it: people retype messages in another case ("FA4
    CuTE", Entry.pattern ignores case) and leave off the closing full stop; the words themselves
    must all be there."""
    return pattern[:-2] + r"\.?" if pattern.endswith(r"\.") else pattern


@lru_cache(maxsize=1)
def entries() -> Tuple[Entry, ...]:
    path = _PACKAGED if _PACKAGED.is_file() else _SOURCE_TREE
    loaded = data_yaml.load(path)["messages"]  # libyaml's loader: the catalog is 500 entries
    return tuple(Entry(e["id"], e["printed"], _as_quoted(e["pattern"]),
                       _needle(e["printed"], e["pattern"]),
                       e["location"], e["first"], e["last"], Category(e["category"]),
                       tuple((e.get("captures") or {}).items()),
                       tuple((str(a[0]), str(a[1]), str(a[2]), str(a[3]))
                             for a in e.get("accepts") or ()),
                       str(e.get("weight") or ""),
                       tuple((str(a[0]), str(a[1]), str(a[2])) for a in e.get("limits") or ()),
                       tuple((str(q[0]), str(q[1]), str(q[2])) for q in e.get("requires") or ()),
                       tuple(str(e.get("dsl_versions") or "").split()),
                       tuple(str(e.get("backends") or "").split()),
                       tuple(str(e.get("switch") or "").split()), str(e.get("remedy") or ""),
                       _words(e["printed"], _as_quoted(e["pattern"]),
                              _needle(e["printed"], e["pattern"])))
                 for e in loaded)


def first_hit(ctx: Context, entry: Entry) -> Optional[Tuple[int, Match[str]]]:
    """The first line printing `entry`: its pattern is compiled only once a line holds its
    needle and words."""
    if not any(all(w in low for w in entry.words)
               for low, _ in ctx.text.first_holding((entry.needle,))):
        return None
    return ctx.first(entry.pattern, (entry.needle,), entry.words)
