"""An optional attention library a program was told to use, missing from its Python: No module
named 'sageattention' / 'xformers' / 'flashinfer' when a node, model loader or server option
selected it (pure). The library, or the program's SDPA mode instead."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import ext_torch
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import GUESSED, NAMED, Signal

_MISSING = re.compile(r"No module named '?(sageattention|xformers|flashinfer)'?(?![.\w])"
                      # diffusers' enable_xformers_memory_efficient_attention() where
                      # is_xformers_available() is False: "xformers is not available. Make sure
                      # it is installed correctly" (diffusers models/attention_processor.py)
                      r"|(xformers) is not available\. Make sure it is installed correctly")
# what each installs as; xformers' and flashinfer's releases each pin a torch (data/ext_torch.yaml)
_DIST = {"sageattention": "sageattention", "xformers": "xformers", "flashinfer": "flashinfer-python"}


def missing(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MISSING, ("no module named", "is not available. make sure"))
    if hit is None:
        return []
    module = hit[1].group(1) or hit[1].group(2)
    dist = _DIST[module]
    note = (" (the index's sageattention is the Triton-only 1.x; SageAttention 2's CUDA kernels "
            "come as wheels built per torch and CUDA, or a build from its repository)"
            if module == "sageattention" else "")
    install = [Remedy(summary=f"Install {dist} into that Python{note}.",
                      commands=[command("pip", "install", dist)])]
    if ext_torch.table().get(dist):  # its releases pin torch: a bare install would replace it
        torch = str(ctx.torch) if ctx.torch is not None else None
        install = ext_torch.remedies(dist, None, torch) if torch else [Remedy(
            summary=f"Install the {dist} release whose metadata requires the installed torch "
                    f"(`pip install {dist}` alone takes the newest, and the torch it pins).")]
    return [Signal("optional_missing", Category.NOT_INSTALLED,
                   f"the program was set to use {module}, which is not installed in the Python "
                   "that runs it", [ctx.quote(hit[0])], NAMED,
                   [*install,
                    r.sdpa("Or switch the attention option to sdpa (PyTorch's own), which needs "
                           "nothing installed:")])]


# Any other top-level module missing from the Python that ran the code (the weakest reading:
# whatever else the report shows ranks above it): a dependency the install skipped, or one
# installed into another environment. The compiled parts of packages (x._C, x_cuda, x_ext) and
# the packages other mechanisms read (torch during a build, flash_attn) are theirs.
_ANY = re.compile(r"No module named ['\"`]?([A-Za-z_][A-Za-z0-9_]{1,60})['\"`]?(?![.\w])")
_OTHERS = re.compile(r"^(?:torch|flash_attn\w*|triton|_\w*|\w*_(?:C|ext|cuda|cuda_\w+|kernels?|"
                     r"lib|cpp))$")


def any_module(ctx: Context) -> List[Signal]:
    from fadoctor.triage.mech_api_skew import dist_of
    from fadoctor.triage.stated_fix import installable

    hit = ctx.first(_ANY, ("no module named",))
    if hit is None or _OTHERS.match(hit[1].group(1)):
        return []
    module = hit[1].group(1)
    dist = dist_of(module)
    known = installable(dist)
    return [Signal("module_missing", Category.NOT_INSTALLED,
                   f"{module} is not installed in the Python that ran this code (a dependency "
                   "the install skipped, or one installed into another environment)",
                   [ctx.quote(hit[0])], GUESSED,
                   [Remedy(summary=f"Install the distribution that provides {module} into that "
                           "same Python (`python -m pip` of the interpreter in the traceback): "
                           + (f"{dist}." if known else
                              "the project's requirements or README name it (most are the "
                              f"module's name with hyphens: {module.replace('_', '-')})."),
                           commands=[command("pip", "install", dist)] if known else [])])]
