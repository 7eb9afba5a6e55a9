"""bitsandbytes without a binary for torch's CUDA: it looks for libbitsandbytes_cuda<XY> next to
its package and, not finding it, loads its CPU-only library ("Could not find the bitsandbytes
CUDA binary at ...libbitsandbytes_cuda128.so", then "compiled without GPU support";
bitsandbytes-foundation/bitsandbytes@1341fb44:bitsandbytes/cextension.py, get_native_library):
the installed release ships no binary for that CUDA (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

SOURCE = "bitsandbytes-foundation/bitsandbytes@1341fb44:bitsandbytes/cextension.py"
# 0.46's wording raises instead (bitsandbytes/cextension.py, get_native_library: "Configured CUDA
# binary not found at {cuda_binary_path}")
_NO_BINARY = re.compile(r"(?:Could not find the bitsandbytes CUDA binary|Configured CUDA binary "
                        r"not found) at [^\n]{0,400}?"
                        r"libbitsandbytes_cuda(\d{2,3})\w*\.(?:so|dll)")


def no_cuda_binary(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_BINARY, ("bitsandbytes cuda binary", "configured cuda binary"))
    if hit is None:
        return []
    digits = hit[1].group(1)  # 128: CUDA 12.8, 118: 11.8
    cuda = f"{digits[:-1]}.{digits[-1]}"
    return [Signal("bitsandbytes_binary", Category.VERSION_CONFLICT,
                   f"the installed bitsandbytes ships no binary for CUDA {cuda} (torch's CUDA), so "
                   "it loaded its CPU-only library: 8-bit and 4-bit GPU kernels are unavailable",
                   dedupe([ctx.quote(hit[0]), *ctx.quotes("torch")]), LOGGED,
                   [Remedy(summary=f"Upgrade bitsandbytes to a release built for CUDA {cuda} (pip "
                           "takes the newest; older releases stop at older CUDA versions).",
                           commands=["pip install --upgrade bitsandbytes"])],
                   details={"source": SOURCE})]
