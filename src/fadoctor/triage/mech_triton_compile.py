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

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.mech_api_skew import frame_package
from fadoctor.triage.mech_fa_triton import FA_TRITON
from fadoctor.triage.signal import LOGGED, RAISED_IN, Signal, dedupe

_FAILED = re.compile(r"\bCompilationError\b|PassManager::run failed|"
                     # the compiled kernel's launch refused (its grid, warps or shared memory)
                     r"Triton Error \[CUDA\]: invalid argument")
_INDUCTOR = ("backendcompilerfailed", "torch._inductor", "inductorerror", "triton_poi_",
             "triton_red_", "triton_per_", "triton_tem_")
# frames that are Triton's or torch's own, or the interpreter's, never the kernel's package
_SKIP = ("triton", "torch", "importlib", "functools", "contextlib", "typing")


def _remedies(owner: str, launch: bool) -> List[Remedy]:
    package = Remedy(summary=f"Move {owner} to a release written for this Triton: downgrade "
                     f"{owner} to the release that worked if this began with its upgrade, or "
                     "upgrade it if the Triton is newer than its kernels know.")
    triton = Remedy(summary=("Downgrade Triton to the release the kernel was tested with, or "
                             "upgrade it past the regression" if launch else "Or move Triton to "
                             f"the release {owner} supports") + " (with torch, whose wheel "
                    "requires one Triton release; its requirements or README name it).")
    off = Remedy(summary=f"Or turn off {owner}'s Triton kernels (its option for the eager or "
                 "CUDA path) until the two agree.")
    return [triton, package, off] if launch else [package, triton, off]


def kernel_compile(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FAILED, ("compilationerror", "passmanager::run failed", "invalid argument"))
    if hit is None or not ctx.text.containing(("triton",)) \
            or ctx.first(FA_TRITON, ("flash_attn_triton", "attn_impl")) is not None \
            or ctx.text.containing(_INDUCTOR):
        return []  # flash-attn's pre-MLIR Triton kernel is mech_fa_triton's; Inductor's own
        # generated kernels are torch's (mech_triton_pin reads the torch/Triton pair)
    index = hit[0]
    package = frame_package(ctx, index, _SKIP) or frame_package(ctx, index, _SKIP, after=30)
    stated = ctx.package("triton", "pytorch-triton", "triton-windows")
    triton = f"Triton {stated.value}" if stated is not None else "the installed Triton"
    owner = package or "a package"
    launch = "invalid argument" in ctx.low(index)
    what = (f"{owner}'s Triton kernel compiled, but {triton} cannot launch it on this GPU (its "
            "launch options, num_warps or shared memory, are refused)" if launch else
            f"{owner}'s Triton kernel does not compile with {triton}")
    owner = package or "that package"
    quotes = dedupe([ctx.quote(index), *([stated.quote] if stated is not None else [])])
    return [Signal("triton_compile", Category.VERSION_CONFLICT,
                   f"{what}: the kernel was written for another Triton release (a language "
                   "feature or call that release lacks), or meets a regression of it",
                   quotes, RAISED_IN, _remedies(owner, launch))]


# Triton 2.0's generated launcher (`File "<string>", line 21, in <kernel>`) looks the kernel up in
# its cache by a key that begins with version_key(): `'-'.join(triton.__version__)` then md5s
# ("2-.-0-.-0-<hashes>"; triton 2.0.0's runtime/jit.py, read from its wheel), and compiles it on
# the KeyError: the KeyError printed first, then "During handling of the above
# exception" and the compile's own failure, is Triton 2.0 failing to compile a kernel written for
# a later Triton. torch 2.0 pins triton 2.0.0, torch 2.1 pins 2.1.0 (ext_torch.yaml's torch_triton).
_TRITON20_KEY = re.compile(r"KeyError: \('2-\.-0-\.-0-(?:[0-9a-f]{32}|\.-d-e-v)")


def triton20_launcher(ctx: Context) -> List[Signal]:
    hit = ctx.first(_TRITON20_KEY, ("keyerror: ('2-.-0-.-0-",))
    if hit is None:
        return []
    return [Signal("triton20_compile", Category.VERSION_CONFLICT,
                   "Triton 2.0's launcher did not find the kernel in its cache and failed to "
                   "compile it (the KeyError whose key starts with Triton's version 2.0.0): the "
                   "kernel was written for a later Triton", [ctx.quote(hit[0])], LOGGED,
                   [Remedy(summary="Upgrade Triton to 2.1.0, the release the kernel's library "
                           "targets (torch 2.1 pins it; with torch 2.0, pip warns of torch's "
                           "triton==2.0.0 pin).",
                           commands=[command("pip", "install", "triton==2.1.0")]),
                    Remedy(summary="Or upgrade torch to 2.1 or later, whose pinned Triton "
                           "compiles it.")],
                   details={"source": "Triton 2.0 runtime/jit.py (the generated launcher's "
                                      "cache lookup)"})]


# Triton's C++ code generator failing a std::map lookup surfaces as Python's "IndexError: map::at".
# Triton 1.0 looked the PTX ISA version up by the driver's CUDA version in a fixed table
# (`_triton.code_gen.add_passes_to_emit_bin`; a newer driver than the table knew failed every
# kernel, triton-lang/triton#155, fixed by falling back to the newest entry); Triton 2.x's lowering of
# Ampere-era kernels (Mamba-2's SSD) fails so on GPUs below sm_80 (state-spaces/mamba#361: Triton
# supports pre-Ampere GPUs poorly).
_MAP_AT = re.compile(r"IndexError: map::at")


def map_at(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MAP_AT, ("map::at",))
    if hit is None:
        return []
    cc = ctx.gpu_cc_exact
    if ctx.text.containing(("_triton.code_gen",)):
        return [Signal("triton_map_at", Category.VERSION_CONFLICT,
                       "Triton 1.0's code generator found no PTX version for this driver's CUDA "
                       "in its table (map::at): the driver is newer than that Triton knows",
                       [ctx.quote(hit[0])], LOGGED,
                       [Remedy(summary="Upgrade triton: later releases take the newest PTX "
                               "version they know for a newer driver.",
                               commands=[command("pip", "install", "--upgrade", "triton")])])]
    if cc is None or cc >= Version("8.0") or not ctx.text.containing(("triton",)):
        return []
    return [Signal("triton_map_at", Category.GPU_UNSUPPORTED,
                   f"Triton's code generator failed (map::at) compiling a kernel for "
                   f"{ctx.gpu[0]} (sm_{cc.major}{cc.minor}): the library's Triton kernels "  # type: ignore[index]
                   "target Ampere (sm_80) or newer, which Triton lowers for older GPUs poorly",
                   dedupe([ctx.quote(hit[0]), *([ctx.gpu[2]] if ctx.gpu else [])]), LOGGED,
                   [Remedy(summary="Run it on an Ampere or newer GPU (sm_80+: A100, RTX 30/40), "
                           "or use the library's path without these Triton kernels (its "
                           "reference / PyTorch implementation).")])]
