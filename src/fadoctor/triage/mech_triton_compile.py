"""A package's Triton kernel that the installed Triton cannot compile: Triton's front end raising
`triton.compiler.errors.CompilationError: at L:C: <the kernel's source>` (its code_generator.py,
on a construct or call that release does not have), or its MLIR pass manager failing ("PassManager::
run failed", raised in its compile stages, triton/backends/nvidia/compiler.py make_ttir/make_ttgir).
The kernel was written for another Triton release than the one installed, or hit a regression of
it: the package's release and Triton's disagree. The package is the nearest traceback frame above
the error outside Triton and torch (pure).

The weakest finding that still names a mechanism (RAISED_IN): Triton's own messages that name a
cause (an arch floor, shared memory, an fp8 type, a torch/Triton pair off its pin) outrank it."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.signal import RAISED_IN, Signal, dedupe

_FAILED = re.compile(r"\bCompilationError\b|PassManager::run failed")
# frames that are Triton's or torch's own, or the interpreter's, never the kernel's package
_SKIP = ("triton", "torch", "importlib", "functools", "contextlib", "typing")


def kernel_compile(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FAILED, ("compilationerror", "passmanager::run failed"))
    if hit is None or not ctx.text.containing(("triton",)) \
            or ctx.text.containing(("flash_attn_triton", "attn_impl")):
        return []  # flash-attn's pre-MLIR Triton kernel is mech_fa_triton's
    index = hit[0]
    package = frame_package(ctx, index, _SKIP) or frame_package(ctx, index, _SKIP, after=30)
    stated = ctx.package("triton", "pytorch-triton", "triton-windows")
    triton = f"Triton {stated.value}" if stated is not None else "the installed Triton"
    owner = package or "the package that owns the kernel"
    quotes = dedupe([ctx.quote(index), *([stated.quote] if stated is not None else [])])
    return [Signal("triton_compile", Category.VERSION_CONFLICT,
                   f"{owner}'s Triton kernel does not compile with {triton}: the kernel was "
                   "written for another Triton release (a language feature or call that release "
                   "lacks), or meets a regression of it",
                   quotes, RAISED_IN,
                   [Remedy(summary=f"Move {owner} to a release written for this Triton: "
                           f"downgrade {owner} to the release that worked if this began with an "
                           f"upgrade of it, or upgrade it if the Triton is newer than its "
                           "kernels know."),
                    Remedy(summary="Or move Triton (with torch, whose wheel requires one Triton "
                           f"release) to the one {owner}'s release supports: its requirements "
                           "or README name it."),
                    Remedy(summary=f"Or turn off {owner}'s Triton kernels (its option for the "
                           "eager or CUDA path) until the two agree.")])]
