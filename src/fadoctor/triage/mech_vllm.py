"""vLLM's attention-backend selector refusing a backend for this configuration: the reasons it
lists (validate_configuration) say which fact of the environment is the cause (pure)."""

from __future__ import annotations

import re
from typing import List, Optional

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
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


# vLLM's V1 engine on a GPU below Ampere: its attention was FlashAttention only at first
# (vllm/v1/attention/backends/flash_attn.py: `assert is_fa_version_supported(self.fa_version)`);
# v0.10.2's release notes: "Extended V1 support to compute capability < 8.0" (vllm-project/vllm
# #23614, #24022). Before it, VLLM_USE_V1=0 runs the V0 engine, whose XFormers backend runs there.
# The installation docs' floor: compute capability 7.0 up to v0.14 (docs.vllm.ai/en/v0.14.0), 7.5
# at v0.21.0 (docs/getting_started/installation/gpu.cuda.inc.md).
_V1 = re.compile(r"VLLM_USE_V1|vllm[\\/]v1[\\/]attention|\bV1 (?:engine|架构)|\bV1架构", re.I)


def v1_pre_ampere(ctx: Context) -> List[Signal]:
    cc = ctx.gpu_cc
    if cc is None or cc >= Version("8.0") or ctx.amd or ctx.gpu is None:
        return []
    hit = ctx.first(_V1, ("vllm_use_v1", "v1"))
    if hit is None:
        return []
    return [Signal("vllm_v1", Category.GPU_UNSUPPORTED,
                   f"vLLM's V1 engine on {ctx.gpu[0]} (sm_{cc.major}{cc.minor}): V1 ran "
                   "FlashAttention only, which needs Ampere, until v0.10.2 extended it to "
                   "compute capability below 8.0", sorted({ctx.quote(hit[0]), ctx.gpu[2]},
                                                          key=lambda q: q.line), NAMED - 10,
                   [Remedy(summary="Upgrade vLLM to 0.10.2 or later, whose V1 engine runs below "
                           "compute capability 8.0 (fp16, not bf16, on these GPUs)"
                           + (": on Volta stay below the releases whose docs raise the floor to "
                              "7.5 (v0.14's docs still list 7.0; v0.21's say 7.5)."
                              if cc < Version("7.5") else "."),
                           commands=[command("pip", "install", "--upgrade", "vllm>=0.10.2,<0.15"
                                             if cc < Version("7.5") else "vllm>=0.10.2")]),
                    Remedy(summary="Or, on an older vLLM, run the V0 engine (its XFormers backend "
                           "runs on Volta and Turing): VLLM_USE_V1=0.",
                           commands=["export VLLM_USE_V1=0"])],
                   details={"source": "vLLM v0.10.2 release notes (#23614, #24022); "
                                      "vllm/v1/attention/backends/flash_attn.py"})]


# vLLM's check of an FP8 KV cache against the backend and GPU (v0.24: "FP8 KV cache is not
# supported by the Triton attention backend on Quadro RTX 8000 (compute capability 7.5); native
# FP8 (fp8e4nv) requires SM89+."): Triton lowers fp8e4nv only on sm_89 and newer, so below that
# the KV cache stays in the model's dtype.
_FP8_KV = re.compile(r"FP8 KV cache is not supported by the (\w[\w ]{0,30}?) (?:attention )?backend "
                     r"on ([^()\n]{1,60}) \(compute capability (\d{1,2}\.\d)\)")


def fp8_kv_cache(ctx: Context) -> List[Signal]:
    hit = ctx.first(_FP8_KV, ("fp8 kv cache is not supported",))
    if hit is None:
        return []
    backend, gpu, cc = hit[1].group(1), hit[1].group(2).strip(), hit[1].group(3)
    return [Signal("vllm_fp8_kv", Category.GPU_UNSUPPORTED,
                   f"vLLM's {backend} attention backend keeps an FP8 KV cache only on compute "
                   f"capability 8.9 or newer (native fp8e4nv), and {gpu} is {cc}",
                   [ctx.quote(hit[0])], NAMED,
                   [Remedy(summary="Keep the KV cache in the model's dtype (fp16/bf16) on this "
                           "GPU: drop --kv-cache-dtype fp8 from the vllm serve command, or pass "
                           "--kv-cache-dtype auto."),
                    Remedy(summary="Or a backend that still keeps FP8 KV on this GPU where the "
                           "release has one (its attention-backend table), or a GPU of compute "
                           "capability 8.9 or newer.")])]
