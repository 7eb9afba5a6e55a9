"""`fadoctor matrix show`: the entries that concern a flash-attn version, a torch release and/or a
GPU (pure selection), rendered as rich tables or JSON (pure renderers)."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel

from fadoctor.archs import arch_runs_on
from fadoctor.errors import UsageError
from fadoctor.matrix.base import minor_of, within
from fadoctor.matrix.fa2 import FlashAttnRelease, asset_minors, parse_local
from fadoctor.matrix.models import Matrix, TorchRelease

SECTIONS = ("gpus", "torch_releases", "flash_attn_releases", "assets", "families",
            "sdpa_backends", "rocm_backends", "fa4_releases", "known_defects")


@dataclass(frozen=True)
class Filters:
    flash_attn: Optional[str] = None
    torch: Optional[str] = None
    gpu: Optional[str] = None

    @property
    def none(self) -> bool:
        return self.flash_attn is None and self.torch is None and self.gpu is None


@dataclass
class Selection:
    filters: Filters
    cc: Optional[Version] = None
    sections: Dict[str, List[Any]] = field(default_factory=dict)


def _parse(option: str, text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion as exc:
        raise UsageError(f"--{option} {text}: not a version") from exc


def gpu_cc(matrix: Matrix, text: str) -> Tuple[Version, Optional[str]]:
    """A compute capability (9.0, sm_90, sm90) or a GPU name the matrix knows."""
    if re.fullmatch(r"\d+\.\d+", text):
        return Version(text), None
    sm = re.fullmatch(r"sm_?(\d+)(\d)[af]?", text.strip().lower())
    if sm:
        return Version(f"{sm[1]}.{sm[2]}"), None
    found = matrix.gpu(text)
    if found is None:
        raise UsageError(f"--gpu {text}: no GPU of that name in the matrix; give its compute "
                         "capability instead (9.0)")
    return found.cc, found.name


def _torch_runs_on(rel: TorchRelease, cc: Version) -> bool:
    for archs in rel.arch_lists.values():
        for item in archs.split(";"):
            number, _, ptx = item.partition("+")
            digits = number.replace(".", "")
            if arch_runs_on(f"sm_{digits}", (cc.major, cc.minor)) or (
                    ptx and arch_runs_on(f"compute_{digits}", (cc.major, cc.minor))):
                return True
    return False


def _fa_runs_on(rel: FlashAttnRelease, cc: Version) -> bool:
    archs = {a for local in rel.assets for a in rel.wheel_archs(local)}
    return any(arch_runs_on(a, (cc.major, cc.minor)) for a in archs)


def _fa_releases(matrix: Matrix, f: Filters, cc: Optional[Version]) -> List[FlashAttnRelease]:
    out = matrix.flash_attn_releases
    if f.flash_attn is not None:
        wanted = _parse("flash-attn", f.flash_attn)
        series = len(wanted.release) == 2  # 2.8 -> every 2.8.x
        tag = "v" + f.flash_attn.lstrip("v")  # v2.0.0 carries version 2.0.0.post1
        out = [r for r in out if (minor_of(r.version) == minor_of(wanted) if series
                                  else r.version == wanted or r.tag == tag)]
        if not out:
            raise UsageError(f"--flash-attn {f.flash_attn}: no such flash-attn 2.x release in "
                             "the matrix")
    if f.torch is not None:
        minor = minor_of(_parse("torch", f.torch))
        out = [r for r in out if minor in asset_minors(r)]
    if cc is not None:
        out = [r for r in out if _fa_runs_on(r, cc)]
    return out


def select(matrix: Matrix, f: Filters) -> Selection:
    cc, gpu_name = gpu_cc(matrix, f.gpu) if f.gpu is not None else (None, None)
    picked = Selection(f, cc)
    fa = _fa_releases(matrix, f, cc)
    torch_minor = minor_of(_parse("torch", f.torch)) if f.torch else None
    minors = {m for r in fa for m in r.wheel_torch} if f.flash_attn else None
    torch = [r for r in matrix.torch_releases
             if (torch_minor is None or r.minor == torch_minor)
             and (minors is None or r.minor in minors) and (cc is None or _torch_runs_on(r, cc))]
    s = picked.sections
    s["flash_attn_releases"] = fa
    s["torch_releases"] = torch
    if len(fa) == 1:
        s["assets"] = [_asset_row(matrix, fa[0], local) for local in fa[0].assets]
    if cc is not None:
        s["gpus"] = [g for g in matrix.gpus if (g.name == gpu_name if gpu_name else g.cc == cc)]
        s["families"] = [x for x in matrix.families
                         if x.min_cc <= cc and (x.max_cc is None or cc <= x.max_cc)]
    if torch_minor is not None or cc is not None:
        s["sdpa_backends"] = [r for r in matrix.sdpa_backends
                              if (torch_minor is None or Version(torch_minor) in r.torch)
                              and (cc is None or r.min_cc <= cc <= r.max_cc)]
    if f.flash_attn is not None:
        s["rocm_backends"] = [b for b in matrix.rocm_backends if any(b.affects(r.version) for r in fa)]
    s["known_defects"] = [d for d in matrix.known_defects
                          if (f.none or any(d.affects(r.version) for r in fa))
                          and (torch_minor is None or d.torch is None
                               or within(d.torch, Version(torch_minor)))
                          and (cc is None or d.gpu_cc is None or within(d.gpu_cc, cc))]
    if f.none:
        s["gpus"], s["families"] = list(matrix.gpus), list(matrix.families)
        s["sdpa_backends"] = list(matrix.sdpa_backends)
        s["rocm_backends"], s["fa4_releases"] = list(matrix.rocm_backends), list(matrix.fa4_releases)
    return picked


def _asset_row(matrix: Matrix, rel: FlashAttnRelease, local: str) -> Dict[str, Any]:
    parsed = parse_local(local)
    abi = matrix.wheel_cxx11_abi(rel, local)
    key = parsed.key if parsed else local
    return {"local_version": local, "python": rel.assets[local],
            "built_against": rel.built_against.get(key),
            "built_against_torch": rel.built_against_torch.get(key),
            "label_cxx11_abi": parsed.cxx11_abi if parsed else None,
            "real_cxx11_abi": abi, "archs": rel.wheel_archs(local)}


# -- renderers --------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """JSON-ready data: versions and specifiers as the strings they were written as."""
    if isinstance(value, BaseModel):
        return {k: plain(getattr(value, k)) for k in type(value).model_fields}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (Version, SpecifierSet)):
        return str(value)
    return value


def to_json(picked: Selection) -> str:
    f = picked.filters
    data: Dict[str, Any] = {"filters": {"flash_attn": f.flash_attn, "torch": f.torch, "gpu": f.gpu,
                                        "compute_capability": str(picked.cc) if picked.cc else None}}
    data.update({name: plain(picked.sections[name]) for name in SECTIONS if name in picked.sections})
    return json.dumps(data, indent=2) + "\n"


def _join(items: List[str]) -> str:
    return ", ".join(items)


def _span(items: List[str]) -> str:
    return items[0] if len(items) == 1 else f"{items[0]}-{items[-1]}" if items else ""


_COLUMNS: Dict[str, Tuple[Tuple[str, Any], ...]] = {
    "gpus": (("GPU", lambda g: g.name), ("CC", lambda g: str(g.cc))),
    "torch_releases": (
        ("torch", lambda r: r.minor), ("latest", lambda r: r.latest_patch),
        ("CUDA (default)", lambda r: _join([v + ("*" if v == r.default_variant else "")
                                            for v in r.cuda_variants])),
        ("Python", lambda r: _span(r.python)),
        ("C++11 ABI", lambda r: _join([str(int(r.variant_abi(v))) for v in r.cuda_variants]))),
    "flash_attn_releases": (
        ("flash-attn", lambda r: str(r.version)), ("torch wheels", lambda r: _join(sorted(
            asset_minors(r), key=Version))),
        ("CUDA", lambda r: _join(r.wheel_cuda)), ("cu rule", lambda r: r.cuda_tag_rule),
        ("Python", lambda r: _span(r.wheel_python)), ("archs", lambda r: " ".join(r.archs)),
        ("built on", lambda r: r.builds_on), ("nvcc", lambda r: r.min_nvcc)),
    "assets": (
        ("wheel", lambda a: a["local_version"]), ("Python", lambda a: _span(a["python"])),
        ("built against", lambda a: f"{a['built_against_torch'] or '?'}+{a['built_against']}"),
        ("real ABI", lambda a: "?" if a["real_cxx11_abi"] is None
         else str(int(a["real_cxx11_abi"]))), ("archs", lambda a: " ".join(a["archs"]))),
    "families": (("family", lambda x: x.family.value), ("name", lambda x: x.name),
                 ("CC", lambda x: f"{x.min_cc}-{x.max_cc or ''}")),
    "sdpa_backends": (("backend", lambda r: r.backend), ("torch", lambda r: str(r.torch)),
                      ("CC", lambda r: f"{r.min_cc}-{r.max_cc}")),
    "rocm_backends": (("backend", lambda b: b.backend), ("flash-attn", lambda b: str(b.versions)),
                      ("GPUs", lambda b: _join(b.gpus)), ("archs", lambda b: _join(b.gpu_archs))),
    "fa4_releases": (("flash-attn-4", lambda r: str(r.version)),
                     ("distribution", lambda r: r.distribution),
                     ("Python", lambda r: str(r.requires_python))),
    "known_defects": (("defect", lambda d: d.id), ("versions", lambda d: str(d.versions)),
                      ("stage", lambda d: d.stage), ("category", lambda d: d.category.value),
                      ("summary", lambda d: d.summary)),
}


def to_text(picked: Selection, width: int = 120, color: bool = False) -> str:
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(file=out, width=width, color_system="standard" if color else None,
                      force_terminal=color, highlight=False)
    for name in SECTIONS:
        rows = picked.sections.get(name)
        if rows is None:
            continue
        table = Table(title=f"{name} ({len(rows)})", title_justify="left", expand=False)
        columns = _COLUMNS[name]
        for header, _ in columns:
            table.add_column(header, overflow="fold")
        for row in rows:
            table.add_row(*(cell(row) for _, cell in columns))
        console.print(table)
    return out.getvalue()
