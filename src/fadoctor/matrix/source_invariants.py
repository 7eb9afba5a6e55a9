"""Invariants of the wheel-source sections: every tier has one source, every pick names a known
source, community rows are one file per combination and carry their own versions, and a speed
ratio names a backend the matrix knows."""

from __future__ import annotations

from typing import List

from packaging.version import Version

from fadoctor.matrix.models import Matrix

TIERS = (1, 2, 3, 4, 5, 6)
# Sources the solver names by id: a matrix without one cannot label its picks.
REQUIRED = ("official", "kernels-hub", "source-build", "pytorch-sdpa")


def sources_cover_tiers(m: Matrix) -> List[str]:
    if not m.wheel_sources:
        return []  # an older matrix without the section: picks are labelled by tier alone
    ids = [s.id for s in m.wheel_sources]
    out = [f"wheel_sources: duplicate entry {i!r}" for i in set(ids) if ids.count(i) > 1]
    out += [f"wheel_sources: no source for tier {t}" for t in TIERS
            if not any(s.tier == t for s in m.wheel_sources)]
    out += [f"wheel_sources: no {i!r} entry (fix names it)" for i in REQUIRED if i not in ids]
    return out


def community_rows_are_exact(m: Matrix) -> List[str]:
    out = []
    for group in m.community_wheels:
        name = f"community_wheels {group.project} {group.version}"
        source = m.wheel_source(group.project)
        if source is None or not source.third_party:
            out.append(f"{name}: project is not a third-party wheel_sources entry")
        seen = set()
        for python, torch, cuda, _tag, file in group.wheels:
            key = (python, torch, cuda)
            if key in seen:
                out.append(f"{name}: two files for {python} torch {torch} CUDA {cuda}")
            seen.add(key)
            label = f"-{group.version}+cu{cuda.replace('.', '')}torch{torch}"
            if label not in file or f"-{python}-" not in file or not file.endswith(
                    f"-{group.platform}.whl"):
                out.append(f"{name}: {file} does not carry {python}, torch {torch}, CUDA {cuda}")
            if m.torch_release(Version(torch)) is None:
                out.append(f"{name}: torch {torch} is not in torch_releases")
    return out


def speeds_are_shares(m: Matrix) -> List[str]:
    return [f"attention_speed {s.backend} of {s.of.value}: ratio {s.ratio} is not in (0, 1.5]"
            for s in m.attention_speed if not 0 < s.ratio <= 1.5]


SOURCE_INVARIANTS = (sources_cover_tiers, community_rows_are_exact, speeds_are_shares)
