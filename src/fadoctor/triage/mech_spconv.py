"""spconv's 2.x break and its builds (traveller59/spconv README, "Breaking changes in Spconv 2.x":
"spconv.xxx move to spconv.pytorch.xxx, change all `import spconv` to `import spconv.pytorch as
spconv`"; its prebuilt binaries are the per-CUDA distributions `spconv-cu102`, `spconv-cu111`
... "for CUDA 10.2", while the plain `spconv` distribution is the CPU build): code written for
spconv 1.x meets a 2.x install ("module 'spconv' has no attribute 'SparseConv3d'"), and the CPU
build lacks the CUDA ops its GPU paths call (SpconvOps has no generate_subm_conv_inds) (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import observed as o
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.signal import NAMED, Signal, dedupe

_OLD_API = re.compile(r"module 'spconv' has no attribute '(SparseConv[123]d|SubMConv[123]d|"
                      r"SparseConvTensor|SparseSequential|SparseInverseConv[123]d|SparseModule|"
                      r"SparseMaxPool[123]d|ops|utils)'")
_CPU_OPS = re.compile(r"SpconvOps'? has no attribute '(\w{3,60})'")
# spconv 2.x's C++ core refusing a CUDA tensor in the CPU build (pccm-generated
# SpconvOps_<op>.cc): "...SpconvOps_get_indice_pairs.cc(65) not implemented for CPU ONLY build."
_CPU_BUILD = re.compile(r"SpconvOps_(\w{3,60})\.cc\(\d+\) not implemented for CPU ONLY build")
# cumm, spconv's tensor library, asked for GPU memory in its CPU build: tensorview/tensor.h's
# TensorStorage, `#ifdef TV_CUDA ... #else TV_THROW_INVALID_ARG("don't compiled with cuda")`
# (FindDefinition/cumm include/tensorview/tensor.h); like spconv, cumm's CUDA builds are the
# per-CUDA distributions cumm-cuXYZ, the plain `cumm` the CPU one
_CUMM_CPU = re.compile(r"(tensorview/tensor\.h\(\d+\)\s*)?don't compiled with cuda", re.I)


# The spconv 2.x CUDA distributions the package index publishes (`pip index versions spconv-cuXYZ`
# for CPython 3.8 and 3.11, Dec 2026): no build for CUDA 10.1, 11.0 or 11.2.
_PUBLISHED = (102, 111, 113, 114, 116, 117, 118, 120, 121, 124, 126)


def _distribution(cuda: int) -> str:
    """The distribution for a CUDA (11.8 -> spconv-cu118); else the newest one of the same major
    not above it, else the oldest one of that major (a driver runs a minor above its own)."""
    same = [c for c in _PUBLISHED if c // 10 == cuda // 10]
    below = [c for c in same if c <= cuda]
    chosen = max(below) if below else min(same) if same else None
    if chosen is None:
        return "spconv-cuXYZ"
    return f"spconv-cu{chosen}" + ("" if chosen == cuda else
                                   f" (none is published for CUDA {cuda // 10}.{cuda % 10})")


def spconv(ctx: Context) -> List[Signal]:
    old = ctx.first(_OLD_API, ("module 'spconv'",))
    if old is not None:
        return [Signal("spconv_api", Category.VERSION_CONFLICT,
                       f"the code is written for spconv 1.x, and spconv 2.x is installed: 2.x "
                       f"moved spconv.{old[1].group(1)} and the rest of its API to spconv.pytorch",
                       [ctx.quote(old[0])], NAMED,
                       [Remedy(summary="Port the imports to spconv 2.x: `import spconv.pytorch "
                               "as spconv` (and `from spconv.pytorch.xxx import` for "
                               "`from spconv.xxx import`); or build the spconv 1.x release the "
                               "code was written for (spconv 1.2.1, from source) in place of "
                               "2.x.", code="import spconv.pytorch as spconv")])]
    cuda = ctx.torch_cuda_stated or parse_version(ctx.seen.get(o.CUDA))
    name = _distribution(cuda.major * 10 + cuda.minor) if cuda is not None and cuda.release[1:] \
        else "spconv-cuXYZ"
    cumm = ctx.first(_CUMM_CPU, ("don't compiled with cuda",))
    if cumm is not None:
        pair = name.replace("spconv-", "cumm-").split(" ")[0]
        return [Signal("cumm_cpu", Category.WRONG_WHEEL,
                       "cumm, spconv's tensor library, is its CPU build (the plain `cumm` "
                       "distribution): it cannot hold a tensor on the GPU",
                       dedupe([ctx.quote(cumm[0]), *ctx.quotes("torch", "cuda")]), NAMED,
                       [Remedy(summary=f"Uninstall cumm and spconv (CPU builds, or a CUDA build "
                               f"beside a CPU one), then install the pair built for torch's CUDA: "
                               f"{pair} with {name} (each publishes one distribution per CUDA, "
                               "cumm-cuXYZ and spconv-cuXYZ).",
                               commands=[command("pip", "uninstall", "-y", "cumm", "spconv")])])]
    ops = ctx.first(_CPU_OPS, ("spconvops",)) or ctx.first(_CPU_BUILD, ("cpu only build",))
    if ops is None:
        return []
    return [Signal("spconv_cpu", Category.WRONG_WHEEL,
                   f"this spconv is the CPU build (the plain `spconv` distribution): its "
                   f"SpconvOps lacks the CUDA op {ops[1].group(1)} that the GPU path calls",
                   dedupe([ctx.quote(ops[0]), *ctx.quotes("torch", "cuda")]), NAMED,
                   [Remedy(summary=f"Replace it with the CUDA build for torch's CUDA, {name} "
                           "(spconv publishes one distribution per CUDA, spconv-cuXYZ; its "
                           "README lists them).",
                           commands=[command("pip", "uninstall", "-y", "spconv")])])]
