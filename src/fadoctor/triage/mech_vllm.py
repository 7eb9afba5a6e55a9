"""vLLM's attention-backend selector refusing a backend for this configuration: the reasons it
lists (validate_configuration) say which fact of the environment is the cause (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

# Read at vllm==0.34.0: vllm/platforms/cuda.py:483-517 (both messages) and
# vllm/v1/attention/backend.py:306-332 (the reasons).
SOURCE = "vllm==0.34.0:vllm/platforms/cuda.py:483,514; vllm/v1/attention/backend.py:306-332"
_SELECTED = re.compile(r"Selected backend (?:AttentionBackendEnum\.)?(\w{1,40}) is not valid for "
                       r"this configuration\. Reason: \[([^\n\]]{1,400})\]")
_NONE_VALID = re.compile(r"No valid attention backend found for ([^\n]{1,60}?) with [^\n]{0,800}?"
                         r"Reasons: \{([^\n]{1,2000})\}")
# The reasons that are facts of the environment, strongest first; the others (sinks, sparse, MLA,
# block size, sliding window) are the model's features against a backend's.
_REASONS = (("compute capability not supported", Category.GPU_UNSUPPORTED),
            ("head_size not supported", Category.HEAD_DIM_UNSUPPORTED),
            ("kv_cache_dtype not supported", Category.DTYPE_UNSUPPORTED),
            ("dtype not supported", Category.DTYPE_UNSUPPORTED),
            ("ImportError", Category.NOT_INSTALLED), ("OSError", Category.NOT_INSTALLED))


def _category(reasons: str) -> Optional[Category]:
    return next((c for r, c in _REASONS if r in reasons), None)


def selector(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SELECTED, ("is not valid for this configuration",))
    if hit is not None:
        index, found = hit
        backend, reasons = found.groups()
        category = _category(reasons)
        if category is None:
            return []
        return [_signal(ctx, index, category, f"vLLM refuses the attention backend chosen, "
                        f"{backend}: {reasons.strip()}", backend, reasons)]
    hit = ctx.first(_NONE_VALID, ("no valid attention backend found",))
    if hit is None:
        return []
    index, found = hit
    reasons = found.group(2)
    category = _category(reasons)
    if category is None:
        return []
    return [_signal(ctx, index, category, f"no attention backend of vLLM accepts this "
                    f"configuration on {found.group(1)}: {{{reasons[:200]}}}", None, reasons)]


def _signal(ctx: Context, index: int, category: Category, message: str,
            backend: Optional[str], reasons: str) -> Signal:
    fixes: List[Remedy] = []
    if backend is not None:
        fixes.append(Remedy(summary=f"Drop the forced backend ({backend}: --attention-backend or "
                            "VLLM_ATTENTION_BACKEND) so vLLM picks one that accepts this "
                            "configuration, or force one that does, such as TRITON_ATTN.",
                            commands=["unset VLLM_ATTENTION_BACKEND"]))
    if "kv_cache_dtype" in reasons:
        fixes.append(Remedy(summary="Serve with the model's own KV-cache dtype: --kv-cache-dtype "
                            "auto."))
    if category == Category.GPU_UNSUPPORTED:
        fixes.append(Remedy(summary="vLLM's FlashAttention backend needs compute capability 8.0 "
                            "or newer (Ampere): on older GPUs choose TRITON_ATTN or FLEX_ATTENTION, "
                            "or serve on a newer GPU."))
    return Signal("vllm_selector", category, message, [ctx.quote(index)], NAMED, fixes,
                  details={"source": SOURCE})
