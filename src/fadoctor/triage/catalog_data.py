"""data/messages.yaml loaded: each entry's bounded pattern, the cheap word that picks the lines
it runs on, where it lives, the releases that print it, its category and what its captures
state (read once)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Pattern, Tuple

import yaml

from fadoctor.report import Category

_PACKAGED = Path(__file__).resolve().parent.parent / "data" / "messages.yaml"
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "data" / "messages.yaml"


@dataclass(frozen=True)
class Entry:
    id: str
    printed: str
    pattern: Pattern[str]
    needle: str
    location: str
    first: str
    last: str
    category: Category
    captures: Tuple[Tuple[str, str], ...] = ()  # (placeholder, the fact it states)
    # a wrapper's accepted flash-attn range by its releases: (first tag, last tag, min, max)
    accepts: Tuple[Tuple[str, str, str, str], ...] = ()
    # a `No module named 'cutlass...'`: the nvidia-cutlass-dsl releases whose wheels hold it
    dsl_versions: Tuple[str, ...] = ()
    # a line that says why a backend is passed over (then another runs): it corroborates a
    # cause, it does not name a failure
    corroborates: bool = False
    # a serving framework's choices for its attention backend at the entry's last release
    backends: Tuple[str, ...] = ()
    switch: Tuple[str, ...] = ()  # vLLM: "env" (VLLM_ATTENTION_BACKEND) and/or "cli"

    @property
    def source(self) -> str:
        """The id's prefix: fa-csrc, fa-setup, fa-py, fa3, fa3-py, fa4, fa4-import, xformers, vllm-fa,
        vllm, sglang, sgl-kernel, cutlass-dsl."""
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
                "vllm": "vLLM's attention backend choice", "sglang": "SGLang's attention backend",
                "sgl-kernel": "sgl-kernel's flash_attn gate",
                "cutlass-dsl": "an nvidia-cutlass-dsl module"}


def _needle(printed: str) -> str:
    """The longest literal word, lower case: the cheap scan that picks the lines to match."""
    words = [w for w in re.split(r"\{\w+\}|\s", printed) if w]
    return max(words, key=len).lower()


@lru_cache(maxsize=1)
def entries() -> Tuple[Entry, ...]:
    path = _PACKAGED if _PACKAGED.is_file() else _SOURCE_TREE
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))["messages"]
    return tuple(Entry(e["id"], e["printed"], re.compile(e["pattern"]), _needle(e["printed"]),
                       e["location"], e["first"], e["last"], Category(e["category"]),
                       tuple((e.get("captures") or {}).items()),
                       tuple((str(a[0]), str(a[1]), str(a[2]), str(a[3]))
                             for a in e.get("accepts") or ()),
                       tuple(str(e.get("dsl_versions") or "").split()),
                       e.get("weight") == "corroborate",
                       tuple(str(e.get("backends") or "").split()),
                       tuple(str(e.get("switch") or "").split()))
                 for e in loaded)
