"""flash-attn's experimental Triton implementation (flash_attn/flash_attn_triton.py, and MPT
models' `attn_impl: triton`, which imports it) failing under a released Triton: its docstring
says "Tested with triton==2.0.0.dev20221202. Triton 2.0 has a new backend (MLIR) but seems like
it doesn't yet work" (Dao-AILab/flash-attention@00583fb:flash_attn/flash_attn_triton.py:1-7). That
nightly is not on the package index any more, so the way out is flash-attn's CUDA kernels (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

FA_TRITON = re.compile(r"flash_attn_triton\b|attn_impl\W{1,4}triton\b", re.I)
# Triton's MLIR compiler failing on the pre-MLIR kernel, or any Triton compile error there
_FAILED = re.compile(r"'scf\.\w+' op\b|\bCompilationError\b|\bMLIR\b|error: [^\n]{0,80}\bop\b|"
                     r"KeyError: \('2-\.-0|in _bwd_kernel|in _fwd_kernel|triton\S* == ?2\.0\.0\b",
                     re.I)
SOURCE = "Dao-AILab/flash-attention@00583fb:flash_attn/flash_attn_triton.py:1-7"


def triton_impl(ctx: Context) -> List[Signal]:
    named = ctx.first(FA_TRITON, ("flash_attn_triton", "attn_impl"))
    failed = ctx.first(_FAILED, ("op", "compilationerror", "mlir", "keyerror", "_kernel",
                                 "triton"))
    if named is None:
        return []
    if failed is None:
        return _fault(ctx, named[0])
    return [Signal("fa_triton", Category.VERSION_CONFLICT,
                   "flash-attn's experimental Triton implementation (flash_attn_triton) was "
                   "written for a pre-MLIR Triton nightly (2.0.0.dev20221202), and a released "
                   "Triton fails to compile it",
                   dedupe([ctx.quote(named[0]), ctx.quote(failed[0])]), LOGGED,
                   [Remedy(summary="Use flash-attn's CUDA implementation instead "
                           "(flash_attn.flash_attn_interface.flash_attn_func; for MPT models "
                           "attn_impl: flash, or torch): the Triton nightly that version needs is "
                           "no longer on the package index."),
                    Remedy(summary="Or keep the Triton path with the triton build it was tested "
                           "with (2.0.0.dev20221202, built from Triton's repository at that "
                           "date).")],
                   details={"source": SOURCE})]


# The same implementation faulting at run time (an illegal memory access for large batch x
# seqlen): an unmaintained kernel's bug. flash_attn_func of the CUDA kernels takes ALiBi
# (alibi_slopes) from v2.4.0 (flash_attn/flash_attn_interface.py: absent at v2.3.6, present at
# v2.4.0), the usual reason to have used the Triton one.
_FAULT = re.compile(r"illegal memory access|misaligned address|unspecified launch failure", re.I)


def _fault(ctx: Context, named: int) -> List[Signal]:
    fault = ctx.first(_FAULT, ("illegal memory", "misaligned", "launch failure"))
    if fault is None:
        return []
    return [Signal("fa_triton", Category.KERNEL_FAILURE,
                   "flash-attn's experimental Triton implementation (flash_attn_triton) faulted: "
                   "it is not maintained (written for a 2022 Triton nightly), and its kernels "
                   "read out of bounds for some shapes",
                   dedupe([ctx.quote(named), ctx.quote(fault[0])]), LOGGED,
                   [Remedy(summary="Use flash-attn's CUDA implementation, "
                           "flash_attn.flash_attn_func, instead: it takes an ALiBi bias "
                           "(alibi_slopes) from flash-attn 2.4.0, and any sequence length.",
                           commands=['pip install "flash-attn>=2.4.0" --no-build-isolation'])],
                   details={"source": SOURCE})]
