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

_FA_TRITON = re.compile(r"flash_attn_triton\b|attn_impl\W{1,4}triton\b", re.I)
# Triton's MLIR compiler failing on the pre-MLIR kernel, or any Triton compile error there
_FAILED = re.compile(r"'scf\.\w+' op\b|\bCompilationError\b|\bMLIR\b|error: [^\n]{0,80}\bop\b|"
                     r"KeyError: \('2-\.-0|in _bwd_kernel|in _fwd_kernel|triton\S* == ?2\.0\.0\b",
                     re.I)
SOURCE = "Dao-AILab/flash-attention@00583fb:flash_attn/flash_attn_triton.py:1-7"


def triton_impl(ctx: Context) -> List[Signal]:
    named = ctx.first(_FA_TRITON, ("flash_attn_triton", "attn_impl"))
    failed = ctx.first(_FAILED, ("op", "compilationerror", "mlir", "keyerror", "_kernel",
                                 "triton"))
    if named is None or failed is None:
        return []
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
