"""A build that could not import torch (or packaging, ninja…): the frontend built flash-attn in
an isolated environment. pip, uv and pixi each get their own documented fix (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage import errors as e
from fadoctor.triage import mech_build
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

_NO_TORCH_IN_BUILD = re.compile(r"No module named '(torch|packaging|psutil|wheel|ninja)'")
# uv's own words in a build (astral-sh/uv, see errors.py's BUILD marks) and its documented fix
# for flash-attn: astral-sh/uv@0.12.5:docs/concepts/projects/config.md:283-300
# (extra-build-dependencies, added in 0.8.4: crates/uv-settings, #14735).
_UV = ("uv sync", "uv add", "uv pip", "uv lock", "uv run", "build backend", "failed to download "
       "and build", "hint: this usually indicates a problem with the package or the build env")
UV_DOCS = "astral-sh/uv@0.12.5:docs/concepts/projects/config.md:283-300"
# prefix-dev/pixi@v0.77.0:docs/reference/pixi_manifest.md:641-670 ([pypi-options]
# no-build-isolation: the build sees the pixi environment)
PIXI_DOCS = "prefix-dev/pixi@v0.77.0:docs/reference/pixi_manifest.md:641-670"
PIXI_NO_ISOLATION = '[pypi-options]\nno-build-isolation = ["flash-attn"]'
UV_EXTRA_BUILD = ('[tool.uv.extra-build-dependencies]\n'
                  'flash-attn = [{ requirement = "torch", match-runtime = true }]')


def isolation(ctx: Context) -> List[Signal]:
    hit = next(((i, m) for i, m in ctx.find(_NO_TORCH_IN_BUILD, ("no module named",))
                if mech_build.build_context(ctx, i) or e.BUILD in ctx.seen.marks), None)
    if hit is None:
        return []
    missing = hit[1].group(1)
    pixi = ctx.has("pixi install", "pixi add", "pixi run", "pixi.toml", "[pypi-options]",
                   "pixi ") is not None
    uv = not pixi and ctx.has(*_UV) is not None
    fixes = [Remedy(summary="Install the build's requirements first, then build without "
                    "isolation so setup.py sees your torch.",
                    commands=["pip install torch packaging ninja wheel",
                              "pip install flash-attn --no-build-isolation"]), mech_build.prebuilt(ctx)]
    if pixi:
        fixes.insert(0, Remedy(
            summary="In a pixi workspace, build flash-attn against the environment's torch: "
                    "list it under no-build-isolation in pixi.toml (pixi's manifest reference), "
                    "with torch a dependency, then install again.",
            code=PIXI_NO_ISOLATION, commands=["pixi install"]))
    if uv:
        fixes.insert(0, Remedy(
            summary="In a uv project, give flash-attn's isolated build the project's own torch "
                    "(pyproject.toml, uv 0.8.4 or later: extra-build-dependencies with "
                    "match-runtime, as uv's documentation shows for flash-attn), then sync again; "
                    "with `uv pip`, install torch first and pass --no-build-isolation.",
            code=UV_EXTRA_BUILD, commands=["uv sync"]))
    frontend = "pixi" if pixi else "uv" if uv else "pip"
    return [Signal("build_isolation", Category.BUILD_ISOLATION,
                   f"{frontend} built flash-attn in an isolated environment without "
                   f"{missing}: flash-attn's setup.py imports torch, so it must build against your "
                   "environment's torch", [ctx.quote(hit[0])], NAMED, fixes,
                   details={"source": PIXI_DOCS if pixi else UV_DOCS} if pixi or uv else {})]
