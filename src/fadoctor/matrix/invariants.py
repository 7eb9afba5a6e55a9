"""Cross-entry invariants of the matrix: each returns problems that name the entry at fault."""

from __future__ import annotations

from typing import Callable, Dict, List, Sequence

from packaging.version import Version

from fadoctor.facts.model import Family
from fadoctor.matrix.base import unsorted
from fadoctor.matrix.fa2 import parse_local
from fadoctor.matrix.models import Matrix
from fadoctor.matrix.source_invariants import SOURCE_INVARIANTS
from fadoctor.report import Category

SDPA_BACKENDS = ("flash", "efficient", "cudnn")


def _unique(section: str, keys: Sequence[str]) -> List[str]:
    seen: Dict[str, int] = {}
    out = []
    for key in keys:
        if key in seen:
            out.append(f"{section}: duplicate entry {key!r}")
        seen[key] = 1
    return out


def _sorted(section: str, keys: Sequence[Version], names: Sequence[str]) -> List[str]:
    at = unsorted(list(keys))
    return [] if at is None else [f"{section}: {names[at]!r} comes after {names[at - 1]!r}; "
                                  "keep the section in ascending order"]


def unique_and_sorted(m: Matrix) -> List[str]:
    fa = [str(r.version) for r in m.flash_attn_releases]
    torch = [r.minor for r in m.torch_releases]
    fa4 = [str(r.version) for r in m.fa4_releases]
    toolkits = [str(t.cuda) for t in m.cuda_driver.toolkits]
    out = (_unique("torch_releases", torch) + _unique("flash_attn_releases", fa)
           + _unique("families", [f.family.value for f in m.families])
           + _unique("fa4_releases", fa4) + _unique("known_defects", [d.id for d in m.known_defects])
           + _unique("gpus", [g.name for g in m.gpus]) + _unique("torch_apis", [a.api for a in m.torch_apis])
           + _unique("cuda_driver.toolkits", toolkits)
           + _unique("cuda_driver.floors", [str(f.cuda_major) for f in m.cuda_driver.floors]))
    missing = {f.value for f in Family} - {f.family.value for f in m.families}
    if missing:
        out.append(f"families: no entry for {sorted(missing)}")
    out += _sorted("torch_releases", [Version(t) for t in torch], torch)
    out += _sorted("flash_attn_releases", [r.version for r in m.flash_attn_releases], fa)
    out += _sorted("fa4_releases", [r.version for r in m.fa4_releases], fa4)
    out += _sorted("cuda_driver.toolkits", [t.cuda for t in m.cuda_driver.toolkits], toolkits)
    return out


def built_against_known_torch(m: Matrix) -> List[str]:
    """Every torch build a wheel was compiled against is a variant the matrix knows, unless that
    torch minor predates the matrix's torch coverage (1.x)."""
    oldest = min((Version(r.minor) for r in m.torch_releases), default=None)
    out = []
    for rel in m.flash_attn_releases:
        for key, variant in rel.built_against.items():
            local = parse_local(key + ("" if rel.cuda_tag_rule == "none" else "cxx11abiTRUE"))
            if local is None:
                continue
            torch = m.torch_release(Version(local.torch_minor))
            if torch is None:
                if oldest is None or Version(local.torch_minor) >= oldest:
                    out.append(f"flash-attn {rel.version}: {key} was built against torch "
                               f"{local.torch_minor}, which torch_releases lacks")
            elif variant not in torch.cuda_variants:
                out.append(f"flash-attn {rel.version}: {key} was built against torch "
                           f"{local.torch_minor}+{variant}, not a variant of torch {torch.minor}")
    return out


def mislabelled_abi_has_a_defect(m: Matrix) -> List[str]:
    """A 'cxx11abiFALSE' wheel compiled against an ABI-1 torch must be covered by a known
    C++11-ABI defect, or the checks would promise that it loads on pip's ABI-0 torch."""
    defects = [d for d in m.known_defects if d.category == Category.CXX11_ABI_MISMATCH
               and d.family == Family.FA2 and d.cxx11_abi is False]
    out = []
    for rel in m.flash_attn_releases:
        for local in rel.assets:
            parsed = parse_local(local)
            if parsed is None or parsed.cxx11_abi is not False:
                continue
            if m.wheel_cxx11_abi(rel, local) is True and not any(
                    d.affects(rel.version) and (d.torch is None
                                                or d.torch.contains(parsed.torch_minor))
                    for d in defects):
                out.append(f"flash-attn {rel.version}: {local} was compiled against an ABI-1 torch "
                           "and no known_defects entry says so")
    return out


def defects_name_releases(m: Matrix) -> List[str]:
    """A defect whose version range holds no release the matrix knows is a typo."""
    versions = {Family.FA2: [r.version for r in m.flash_attn_releases],
                Family.FA4: [r.version for r in m.fa4_releases]}
    return [f"known_defects {d.id!r}: versions {d.versions} match no {d.family.value} release"
            for d in m.known_defects if d.family in versions
            and not any(d.affects(v) for v in versions[d.family])]


def sdpa_ranges_do_not_overlap(m: Matrix) -> List[str]:
    out = [f"sdpa_backends: unknown backend {r.backend!r} (one of {', '.join(SDPA_BACKENDS)})"
           for r in m.sdpa_backends if r.backend not in SDPA_BACKENDS]
    for rel in m.torch_releases:
        for backend in SDPA_BACKENDS:
            hits = [r for r in m.sdpa_backends if r.backend == backend
                    and Version(rel.minor) in r.torch]
            if len(hits) > 1:
                out.append(f"sdpa_backends: {backend} has {len(hits)} ranges for torch {rel.minor}")
            out += [f"sdpa_backends: {backend} for torch {r.torch}: min_cc {r.min_cc} > max_cc "
                    f"{r.max_cc}" for r in hits if r.min_cc > r.max_cc]
    return out


def gpus_resolve_to_themselves(m: Matrix) -> List[str]:
    """Each GPU's own name must find that entry: otherwise a broader pattern shadows it."""
    return [f"gpus: {g.name!r} resolves to {found.name if found else 'nothing'}"
            for g in m.gpus if (found := m.gpu(g.name)) is not g]


INVARIANTS: Sequence[Callable[[Matrix], List[str]]] = (
    unique_and_sorted, built_against_known_torch, mislabelled_abi_has_a_defect,
    defects_name_releases, sdpa_ranges_do_not_overlap, gpus_resolve_to_themselves,
    *SOURCE_INVARIANTS,
)
