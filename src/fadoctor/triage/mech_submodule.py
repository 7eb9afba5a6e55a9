"""A module inside an installed package that the installed release does not have: "No module
named 'diffusers.models.attention_dispatch'" — the code was written for another release (a newer
one, or an unreleased main branch), for packages without an API table of their own (flash_attn,
transformers and Triton have theirs in mech_api; torch in mech_torch_api). A compiled part
(`_C`, `*_cuda`) missing is a broken build instead, which other mechanisms read (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import dist_of
from fadoctor.triage.signal import RAISED_IN, Signal, dedupe

_SUBMODULE = re.compile(r"No module named ['\u2018\u2019\"`]?([A-Za-z_]\w*)\.([\w.]+?)['\u2018\u2019\"`]?"
                        r"(?![\w.])")
_TABLED = {"flash_attn", "transformers", "triton", "torch", "torchvision", "torchaudio"}
_COMPILED = re.compile(r"(?:^|\.)_?C$|_cuda$|_ext$|_kernels?$|\.so$|_cpp$|_C\.", re.I)


def submodule(ctx: Context) -> List[Signal]:
    for index, hit in ctx.find(_SUBMODULE, ("no module named",)):
        top, rest = hit.group(1), hit.group(2)
        if top in _TABLED or _COMPILED.search(rest) or top.startswith("flash_attn"):
            continue
        if top in _COMFY:
            return [_comfy(ctx, index, f"{top}.{rest}")]
        dist = dist_of(top)
        stated = ctx.package(dist)
        have = f" {stated.value}" if stated is not None else ""
        return [Signal("missing_submodule", Category.VERSION_CONFLICT,
                       f"the installed {dist}{have} has no {top}.{rest}: the code importing it "
                       "was written for another release of it",
                       dedupe([ctx.quote(index), *([stated.quote] if stated else [])]), RAISED_IN,
                       [Remedy(summary=f"Upgrade {dist} to the release that has {top}.{rest} "
                               "(if no release has it yet, the code follows its main branch: "
                               f"install {dist} from source), or pin the code to the {dist} "
                               "release it was written for.",
                               commands=[command("pip", "install", "--upgrade", dist)])])]
    return []


# ComfyUI's own packages (comfyanonymous/ComfyUI: comfy/, comfy_extras/, comfy_api/) are not on
# the package index: a custom node that imports a newer one needs ComfyUI itself updated.
_COMFY = {"comfy", "comfy_extras", "comfy_api", "comfy_execution"}


def _comfy(ctx: Context, index: int, module: str) -> Signal:
    return Signal("missing_submodule", Category.VERSION_CONFLICT,
                  f"this ComfyUI has no {module}: the custom node importing it was written for a "
                  "newer ComfyUI (custom nodes follow ComfyUI's main branch)", [ctx.quote(index)],
                  RAISED_IN,
                  [Remedy(summary="Update ComfyUI itself, not only the custom node: ComfyUI "
                          "Manager's \"Update ComfyUI\", update\\update_comfyui.bat in the "
                          "portable build, or git pull in ComfyUI's folder (then its "
                          "requirements.txt); or pin the custom node to a release written for this "
                          "ComfyUI.")])
