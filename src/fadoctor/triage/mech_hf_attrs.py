"""Code reading an attribute a transformers model class has in some releases and not in the one
installed: "'Qwen2_5_VLVisionAttention' object has no attribute 'is_causal'" (4.53.0 only; 4.53.1
set it), "'Qwen2FlashAttention2' object has no attribute '_flash_attention_forward'" (gone from
4.43.0). Looked up in data/transformers_attrs.json (tools/gen_hf_attrs.py, from transformers'
release wheels): each model class's releases, the attributes some of them lack, and the
per-backend attention classes the attention refactor merged into <Model>Attention (what code
written for LlamaFlashAttention2 still reads). Read only when a report shows such an error (pure).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage import data_yaml
from fadoctor.triage.api_tables import _indexes
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

SOURCE = "transformers' release wheels: data/transformers_attrs.json (tools/gen_hf_attrs.py)"
_ATTR = re.compile(r"'([A-Z]\w{2,80})' object has no attribute '(\w{1,80})'")
_BACKEND = re.compile(r"(?:Flash|Sdpa|Flex)Attention2?$")
_FRAME = re.compile(r"(?:site-packages|dist-packages)[/\\](\w+)[/\\]|[/\\]modules[/\\]"
                    r"transformers_modules[/\\]")


@dataclass(frozen=True)
class Attrs:
    tags: Tuple[str, ...]
    raw_classes: Dict[str, str]  # runs as the file writes them, read per class when asked
    raw_attributes: Dict[str, Dict[str, str]]
    merged: Dict[str, Tuple[str, ...]]

    def index(self, installed: Optional[Version]) -> Optional[int]:
        """The installed release's index (the newest tag not above it, for a release the
        table skips)."""
        if installed is None:
            return None
        below = [i for i, tag in enumerate(self.tags) if Version(tag) <= installed]
        return below[-1] if below else None

    def runs(self, cls: str) -> Tuple[int, ...]:
        return _indexes(self.raw_classes[cls]) if cls in self.raw_classes else ()

    def attribute(self, cls: str, attr: str) -> Tuple[int, ...]:
        runs = self.raw_attributes.get(cls, {}).get(attr)
        return _indexes(runs) if runs else ()

    def attributes(self, cls: str) -> Dict[str, Tuple[int, ...]]:
        return {a: _indexes(r) for a, r in self.raw_attributes.get(cls, {}).items()}


def _path(name: str) -> Path:
    return data_yaml.path(name)


@lru_cache(maxsize=1)
def table() -> Attrs:
    raw = json.loads(_path("transformers_attrs.json").read_text(encoding="utf-8"))
    return Attrs(tuple(raw["tags"]), raw["classes"], raw["attributes"],
                 {c: tuple(a) for c, a in raw["merged"].items()})


def _installed(ctx: Context) -> Optional[Version]:
    stated = ctx.package("transformers")
    try:
        return Version(stated.value) if stated is not None else None
    except InvalidVersion:
        return None


def _caller(ctx: Context, index: int) -> Optional[str]:
    for line in range(index, max(index - 40, -1), -1):
        found = _FRAME.search(ctx.text.lines[line])
        if found and found.group(1) not in ("transformers", "torch"):
            return found.group(1) or "the model's remote code"
    return None


def _pin(version: str) -> str:
    return command("pip", "install", requirement("transformers", version))


def _removed(ctx: Context, index: int, what: str, last: str, removed: str, why: str
             ) -> Signal:
    caller = _caller(ctx, index)
    code = caller or "the code that reads it (remote model code, or a library patching the model)"
    return Signal("hf_attribute", Category.VERSION_CONFLICT,
                  f"{what}, which transformers had up to {last} and {removed} removed{why}: "
                  f"{code} was written for an older transformers than the one installed",
                  [ctx.quote(index)], NAMED,
                  [Remedy(summary=f"Pin transformers to {last}, the last release with it (with "
                          "the versions of the other libraries that release supports).",
                          commands=[_pin(last)]),
                   Remedy(summary=f"Or update {code} to a release written for this transformers "
                          "(its changelog names the transformers it supports).")],
                  details={"source": SOURCE})


def _direct(ctx: Context, index: int, data: Attrs, cls: str, attr: str,
            at: Optional[int]) -> Optional[Signal]:
    have = data.attribute(cls, attr)
    if not have:
        return None
    runs = data.runs(cls)
    if at is not None and (at in have or at not in runs):
        return None  # the installed release has it (or has no such class): another cause
    what = f"{cls}.{attr}"
    later = [i for i in have if at is not None and i > at]
    if later:
        first = data.tags[later[0]]
        return Signal("hf_attribute", Category.VERSION_CONFLICT,
                      f"{what} is missing from transformers {data.tags[at]}"  # type: ignore[index]
                      f" and set again from {first}: the installed release lacks what its own "
                      "code (or the code calling it) reads", [ctx.quote(index)], NAMED,
                      [Remedy(summary=f"Upgrade transformers to {first} or later, which has it.",
                              commands=[command("pip", "install", "--upgrade",
                                                requirement("transformers", first, op=">="))])],
                      details={"source": SOURCE})
    if have[-1] == len(data.tags) - 1:
        return None  # present at the newest release and the installed one unknown: no claim
    return _removed(ctx, index, what, data.tags[have[-1]], data.tags[have[-1] + 1], "")


def _merged(ctx: Context, index: int, data: Attrs, cls: str, attr: str,
            at: Optional[int]) -> Optional[Signal]:
    if not cls.endswith("Attention") or _BACKEND.search(cls):
        return None
    for backend in ("FlashAttention2", "SdpaAttention", "FlexAttention"):
        gone = cls[:-len("Attention")] + backend
        if attr in data.merged.get(gone, ()):
            last = data.runs(gone)[-1]
            if at is not None and at <= last:
                return None
            return _removed(ctx, index, f"{attr}, an attribute of {gone}", data.tags[last],
                            data.tags[last + 1], f" when it merged {gone} into {cls}")
    return None


def _kind(ctx: Context, index: int, data: Attrs, cls: str, attr: str,
          at: Optional[int]) -> Optional[Signal]:
    """A class transformers does not have (remote code's InternLM2FlashAttention2) of a kind
    whose transformers classes all lost the attribute at one release."""
    backend = _BACKEND.search(cls)
    if cls in data.raw_classes or backend is None or not ctx.text.containing(("transformers",)):
        return None
    ends = Counter(data.attribute(name, attr)[-1] for name, attrs in data.raw_attributes.items()
                   if name.endswith(backend.group(0)) and attr in attrs)
    if not ends:
        return None
    last, count = ends.most_common(1)[0]
    if count < 3 or count < 0.8 * sum(ends.values()) or last == len(data.tags) - 1 \
            or (at is not None and at <= last):
        return None
    return _removed(ctx, index, f"{attr} of a {backend.group(0)} class (transformers' own "
                    f"{count} {backend.group(0)} classes had it)", data.tags[last],
                    data.tags[last + 1], "")


def attribute(ctx: Context) -> List[Signal]:
    for index, found in ctx.find(_ATTR, ("object has no attribute",)):
        cls, attr = found.group(1), found.group(2)
        if not (_BACKEND.search(cls) or cls.endswith(("Attention", "Model", "ForCausalLM",
                                                      "ForConditionalGeneration",
                                                      "DecoderLayer"))):
            continue
        data = table()
        at = data.index(_installed(ctx))
        for rule in (_direct, _merged, _kind):
            signal = rule(ctx, index, data, cls, attr, at)
            if signal is not None:
                return [signal]
    return []

