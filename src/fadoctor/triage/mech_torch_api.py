"""A caller needs a torch API the installed torch does not have (`module 'torch.library' has no
attribute 'wrap_triton'`): the torch releases that define each name come from torch's wheels
(data/torch_api.yaml, tools/gen_torch_api.py), and where flash-attn first calls it from its
release tags; the fix is a torch that has it, or the caller's last release before it (pure)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from packaging.version import Version

from fadoctor.install.torch import extra_index_args
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage import data_yaml
from fadoctor.triage import observed as o
from fadoctor.triage import remedies as r
from fadoctor.triage.api_tables import api
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_DATA = Path(__file__).resolve().parent.parent / "data" / "torch_api.yaml"
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "data" / "torch_api.yaml"
_ATTR = re.compile(r"module '(torch(?:\.\w{1,40}){0,4})' has no attribute '(\w{1,60})'")
_IMPORT = re.compile(r"cannot import name '(\w{1,60})' from '(torch(?:\.\w{1,40}){0,4})'")
_MODULE = re.compile(r"No module named '(torch(?:\.\w{1,40}){1,4})'")
_FRAME = re.compile(r"[/\\](?:site|dist)-packages[/\\](\w+)[/\\]")
# torch's dtypes are registered from C++ (torch/csrc/utils/tensor_dtypes.cpp), so the wheels'
# Python sources (data/torch_api.yaml) do not list them: the first release whose
# libtorch_python.so (from 2.7, libtorch_cpu.so) holds each name, read from the 2.0.0, 2.1.0,
# 2.2.0, 2.3.0, 2.6.0, 2.7.0 and 2.8.0 wheels
_DTYPES: Dict[str, List[Optional[str]]] = {
    **{name: ["2.1.0", None] for name in ("float8_e4m3fn", "float8_e5m2")},
    **{name: ["2.2.0", None] for name in ("float8_e4m3fnuz", "float8_e5m2fnuz")},
    **{name: ["2.3.0", None] for name in ("uint16", "uint32", "uint64")},
    "float8_e8m0fnu": ["2.7.0", None], "float4_e2m1fn_x2": ["2.8.0", None]}
# names torch 2.0 added, before the table's first release (read from the 1.13.1 and 2.0.0 wheels:
# torch/nn/functional.py binds scaled_dot_product_attention from 2.0.0, 1.13.1 only the private
# _scaled_dot_product_attention; torch/__init__.py defines compile from 2.0.0)
_FROM_2_0: Dict[str, Dict[str, List[Optional[str]]]] = {
    "torch.nn.functional": {"scaled_dot_product_attention": ["2.0.0", None]},
    "torch": {"compile": ["2.0.0", None]}}


@lru_cache(maxsize=1)
def _table() -> Tuple[Dict[str, Dict[str, List[Optional[str]]]], Dict[str, str], List[str]]:
    path = _DATA if _DATA.is_file() else _SOURCE_TREE
    raw = data_yaml.load(path)
    return raw["modules"], raw.get("flash_attn_uses", {}), raw["releases"]


def _module_span(module: str) -> Optional[List[Optional[str]]]:
    """The torch releases a module exists in: from the first that defines any name in it to the
    last that still does (None: still there)."""
    spans = [s for s in _table()[0].get(module, {}).values() if s and s[0]]
    if not spans:
        return None
    lasts = [s[1] for s in spans]
    first = min((str(s[0]) for s in spans), key=Version)
    return [first, None if None in lasts else max((str(v) for v in lasts), key=Version)]


def _named(ctx: Context) -> Optional[Tuple[int, str, List[Optional[str]]]]:
    """The line, the dotted name the report says torch lacks, and the releases that have it."""
    found = ctx.first(_ATTR, ("has no attribute",))
    if found is not None:
        module, name = found[1].group(1), found[1].group(2)
    else:
        found = ctx.first(_IMPORT, ("cannot import name",))
        if found is None:
            gone = ctx.first(_MODULE, ("no module named 'torch.",))
            span = _module_span(gone[1].group(1)) if gone else None
            return (gone[0], gone[1].group(1), span) if gone and span else None
        module, name = found[1].group(2), found[1].group(1)
    span = _table()[0].get(module, {}).get(name) or _FROM_2_0.get(module, {}).get(name) or (
        _DTYPES.get(name) if module == "torch" else None)
    return (found[0], f"{module}.{name}", span) if span is not None else None


def missing(ctx: Context) -> List[Signal]:
    named = _named(ctx)
    if named is None:
        return []
    index, dotted, span = named
    _, uses, releases = _table()
    first, last = str(span[0]), span[1]
    caller = _caller(ctx, index)
    flash = dotted in uses and (caller == "flash_attn" or ctx.fa2 is not None
                                or (caller is None and r.attention_in_play(ctx)))
    who = "flash-attn" if flash else (caller or "the caller")
    torch = ctx.torch
    quotes = dedupe([ctx.quote(index), *ctx.quotes(o.TORCH)])
    known_first = dotted.rpartition(".")[2] in _FROM_2_0.get(dotted.rpartition(".")[0], {})
    if (first != releases[0] or known_first) and (last is None or torch is None
                                                  or torch <= Version(last)):
        # added in `first`: the installed torch is older than the caller expects
        older = torch is not None and torch < Version(first)
        message = (f"{who} calls {dotted}, which torch defines from {first} on"
                   + (f"; torch {torch} is older" if older else
                      "; the installed torch is older" if torch is None else "")
                   + (f" (flash-attn calls it from {uses[dotted]})" if flash else ""))
        remedies = [Remedy(summary=f"Upgrade torch to {first} or later"
                           + (" (the flash-attention build must then match that torch)"
                              if flash or ctx.fa2 is not None else "") + ", or:",
                           commands=[command("pip", "install", f"torch>={first}")])]
        if flash:
            before = _release_before(uses[dotted])
            if before is not None:
                remedies.insert(0, Remedy(
                    summary=f"Keep this torch and pin flash-attn {before}, the last release "
                            f"before flash-attn called {dotted}.",
                    commands=[command("pip", "install", requirement("flash-attn", before),
                                      "--no-build-isolation")]))
        elif caller:
            remedies.append(Remedy(summary=f"Or pin the {caller} release written for this torch "
                                   f"(one from before it called {dotted})."))
        return [Signal("torch_api", Category.VERSION_CONFLICT, message, quotes, NAMED, remedies,
                       details={"source": "torch's wheels at each minor release (torch_api.yaml)"
                                + (f"; {uses[dotted]}" if flash else "")})]
    if last is not None:
        message = (f"{who} calls {dotted}, which torch removed after {last}"
                   + (f"; torch {torch} is newer" if torch is not None else ""))
        return [Signal("torch_api", Category.VERSION_CONFLICT, message, quotes, NAMED,
                       [Remedy(summary=f"Upgrade {who} to a release written for this torch, or "
                               f"use torch {last} or older.",
                               commands=[command("pip", "install", f"torch<={last}.999")])],
                       details={"source": "torch's wheels at each minor release"})]
    return []


def _caller(ctx: Context, index: int) -> Optional[str]:
    for line in range(index, max(index - 40, -1), -1):
        found = _FRAME.search(ctx.text.lines[line])
        if found and found.group(1) != "torch":
            return found.group(1)
    return None


def _release_before(where: str) -> Optional[str]:
    """The flash-attn release just before the tag of `where` (repo@tag:path:line)."""
    tag = where.split("@", 1)[1].split(":", 1)[0]
    data = api("flash_attn")
    tags = list(data.tags)
    if tag not in tags:
        return None
    earlier = [t for t in tags[:tags.index(tag)] if re.match(r"^v\d+\.\d+\.\d+(\.post\d+)?$", t)]
    return earlier[-1].lstrip("v") if earlier else None


# scaled_dot_product_attention's keywords by release (PyTorch's documentation at each release:
# docs/2.0 shows (query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False); `scale` is
# in 2.1's signature, `enable_gqa` first in 2.5's, 2.4's page lacks it).
_SDPA_KEYWORDS = {"scale": "2.1", "enable_gqa": "2.5"}
_SDPA_KEYWORD = re.compile(r"scaled_dot_product_attention\(\)[^\n]{0,60}?(?:got an unexpected "
                           r"keyword argument|does not have a keyword argument) '(\w{1,30})'")


def sdpa_keyword(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SDPA_KEYWORD, ("keyword argument",))
    if hit is None or hit[1].group(1) not in _SDPA_KEYWORDS:
        return []
    keyword = hit[1].group(1)
    first = _SDPA_KEYWORDS[keyword]
    have = f"torch {ctx.torch}" if ctx.torch is not None else "the installed torch"
    return [Signal("sdpa_keyword", Category.VERSION_CONFLICT,
                   f"the caller passes scaled_dot_product_attention({keyword}=...), a keyword "
                   f"torch has from {first} on; {have} is older", dedupe(
                       [ctx.quote(hit[0]), *ctx.quotes(o.TORCH)]), NAMED,
                   [Remedy(summary=f"Upgrade torch to {first} or newer, or use the caller's "
                           "release written for this torch.",
                           commands=[command("pip", "install", f"torch>={first}", *(
                               extra_index_args(str(ctx.torch)) if ctx.torch else []))])],
                   details={"source": "PyTorch documentation of "
                                      "torch.nn.functional.scaled_dot_product_attention at 2.0, "
                                      "2.1, 2.4 and 2.5"})]
