"""xformers' dispatcher found no operator for the inputs ("No operator found for
`memory_efficient_attention_forward`"): it lists each operator it tried and why each refused
(pure). The cause is the reason that refuses the most operators: an extension that did not load,
tensors on the CPU, a GPU outside every operator's range, a dtype, or a head dim.

The reasons, and their wording, are xformers' own: `AttentionOpBase.not_supported_reasons` in
xformers/ops/fmha/common.py and the dispatcher's `_run_priority_list` in dispatch.py, read at
v0.0.16, v0.0.20, v0.0.23, v0.0.28 and v0.0.35."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Set, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import IMPLIED, NAMED, Signal, dedupe

SOURCE = ("facebookresearch/xformers@v0.0.35:xformers/ops/fmha/common.py:421-497 "
          "(not_supported_reasons; the same wording from v0.0.16, `(too old)` from v0.0.23, "
          "`(too new)` at v0.0.35), xformers/ops/fmha/dispatch.py:_run_priority_list; "
          "@v0.0.23:xformers/ops/fmha/cutlass.py:325 (bf16 on pre-A100); "
          "@v0.0.16:xformers/ops/fmha/flash.py:212 (the flash operator's bare compute capability); "
          "@v0.0.16:xformers/ops/fmha/cutlass.py BwOp (float32 backward above sm80, #517)")

_HEAD = re.compile(r"(?:No operator found for|Operator) `(memory_efficient_attention\w{0,30}|"
                   r"\w{1,60})`(?: with inputs| does not support inputs)")
_OP = re.compile(r"`([\w.@-]{1,60})` is not supported because")
_QUERY = re.compile(r"query\s*:\s*shape=\(([\d, ]{1,60})\)\s*\((torch\.\w{1,20})\)")
# each family: the reason lines of common.py/cutlass.py that belong to it
_REASONS: Tuple[Tuple[str, re.Pattern[str]], ...] = (
    ("not_built", re.compile(r"xFormers wasn't build with CUDA support|operator wasn't built",
                             re.I)),
    ("device", re.compile(r"device=(\w{1,10}) \(supported: ")),
    ("too_old", re.compile(r"requires (?:a )?device with capability >?=? ?\((\d+), ?(\d+)\) but "
                           r"your GPU has capability \((\d+), ?(\d+)\) \(too old\)")),
    # v0.0.16-v0.0.20's flash.py: no capability of the GPU in the reason
    ("too_old_bare", re.compile(r"requires a GPU with compute capability (?:> ?|==? ?)(\d+)\.(\d+)"
                                r"(?! \(A100\))(?!.*for 'query)")),
    ("too_new", re.compile(r"requires (?:a )?device with capability <?=? ?\((\d+), ?(\d+)\) but "
                           r"your GPU has capability \((\d+), ?(\d+)\) \(too new\)")),
    ("bf16_old", re.compile(r"bf16 is only supported on A100\+ GPUs")),
    # cutlass.py's backward (v0.0.16-v0.0.17): float32 with a head dim over 64 on any GPU above
    # sm80 ("Sm86 does not have enough shared-memory", facebookresearch/xformers#517)
    ("smem", re.compile(r"Sm(\d{2,3}) does not have enough shared-memory")),
    ("dtype", re.compile(r"dtype=(torch\.\w{1,20}) \(supported: \{([^}]{1,120})\}\)")),
    ("head_dim", re.compile(r"max\(query\.shape\[-1\](?: != |, )value\.shape\[-1\]\) > (\d+)|"
                            r"min\(query\.shape\[-1\], value\.shape\[-1\]\) < (\d+)|"
                            r"unsupported embed per head: (\d+)|query\.shape\[-1\] % (\d+) != 0")),
)
# the order that breaks a tie in how many operators a reason refuses: the more basic cause first;
# but a GPU newer than as many operators accept as were not built is a release older than the
# GPU (its kernels for it were never compiled), not a build for another torch
_PRIORITY = ["too_new", *(name for name, _ in _REASONS if name != "too_new")]


def _pattern(family: str) -> re.Pattern[str]:
    return dict(_REASONS)[family]


def no_operator(ctx: Context) -> List[Signal]:
    hit = ctx.first(_HEAD, ("no operator found for", "does not support inputs"))
    if hit is None:
        return []
    start, _ = hit
    ops, query, lines = _read(ctx, start)
    counts: Dict[str, int] = {}
    for families in ops.values():
        for family in families:
            counts[family] = counts.get(family, 0) + 1
    if not counts:  # no reasons: where no operator is listed either, the report cut them
        return [] if ops else _backward_unlisted(ctx, start, hit[1].group(1))
    family = max(counts, key=lambda f: (counts[f], -_PRIORITY.index(f)))
    found = _built(ctx, family, query, lines)
    if found is None:
        return []
    category, message, remedies = found
    refused = f"{counts[family]} of the {len(ops)} operators it tried"
    quotes = dedupe([ctx.quote(start), *(ctx.quote(i) for i in lines[family][:2]),
                     *([ctx.gpu[2]] if ctx.gpu else [])])
    return [Signal("xformers_dispatch", category,
                   f"xformers found no attention operator for these inputs: {message} "
                   f"(the reason given by {refused})", quotes, NAMED, remedies,
                   details={"source": SOURCE})]


def _read(ctx: Context, start: int
          ) -> Tuple[Dict[str, Set[str]], Optional[Tuple[List[int], str]], Dict[str, List[int]]]:
    """The operators and the families of their reasons; the query's shape and dtype; the lines
    of each family's reasons."""
    ops: Dict[str, Set[str]] = {}
    lines: Dict[str, List[int]] = {}
    query: Optional[Tuple[List[int], str]] = None
    current: Optional[str] = None
    end = min(len(ctx.text.lines), start + 80)
    for index in range(start, end):
        line = ctx.text.lines[index]
        if index > start and _HEAD.search(line):
            break  # the next error's block
        shape = _QUERY.search(line)
        if shape and query is None:
            query = [int(x) for x in shape.group(1).replace(" ", "").split(",") if x], \
                shape.group(2)
        op = _OP.search(line)
        if op:
            current = op.group(1)
            ops.setdefault(current, set())
            continue
        if current is None:
            continue
        for family, pattern in _REASONS:
            if pattern.search(line):
                ops[current].add(family)
                lines.setdefault(family, []).append(index)
    return ops, query, lines


def _built(ctx: Context, family: str, query: Optional[Tuple[List[int], str]],
           lines: Dict[str, List[int]]) -> Optional[Tuple[Category, str, List[Remedy]]]:
    text = ctx.text.lines[lines[family][0]]
    head_dim = query[0][-1] if query and query[0] else None
    dtype = query[1] if query else None
    sdpa = r.sdpa("PyTorch's own attention has no such limit here: turn xformers off for this "
                  "model (diffusers: do not call enable_xformers_memory_efficient_attention; "
                  "ComfyUI: --use-pytorch-cross-attention; or uninstall xformers, so the "
                  "framework falls back to SDPA).")
    if family == "not_built":
        return (Category.TORCH_VERSION_MISMATCH,
                "xformers' C++/CUDA operators are not loaded (\"xFormers wasn't build with CUDA "
                "support\" / \"operator wasn't built\"): the installed xformers was built for "
                "another torch or CUDA than the one installed, or is a CPU build",
                [*r.rebuild_other(ctx, "xformers", _torch_of(ctx)), sdpa])
    if family == "device":
        found = _pattern("device").search(text)
        device = found.group(1) if found else "cpu"
        return (Category.TORCH_CPU_ONLY,
                f"the tensors are on {device}, and xformers' operators run on CUDA only: torch "
                "sees no GPU (a CPU-only torch, or no usable driver)",
                [Remedy(summary="Install a CUDA build of torch (`python -c \"import torch; "
                        "print(torch.version.cuda, torch.cuda.is_available())\"` says None or "
                        "False now), then move the model to the GPU.",
                        commands=[r.REVEAL_TORCH]), sdpa])
    if family == "too_old_bare":
        found = _pattern(family).search(text)
        floor = f"{found.group(1)}.{found.group(2)}" if found else "8.0"
        gpu = f"{ctx.gpu[0]} (compute capability {ctx.gpu[1]})" if ctx.gpu and ctx.gpu[1] \
            else "this GPU"
        return (Category.GPU_UNSUPPORTED,
                f"xformers' flash operator needs a GPU of compute capability above {floor} "
                f"(Ampere, sm80, or newer), and {gpu} is older",
                [Remedy(summary="Do not force the flash operator (op=MemoryEfficientAttentionFlash"
                        "AttentionOp / flshattF): let xformers dispatch, and its cutlass operator "
                        "(cutlassF) runs on pre-Ampere GPUs."), sdpa])
    if family in ("too_old", "too_new"):
        found = _pattern(family).search(text)
        if found is None:
            return None
        need = f"{found.group(1)}.{found.group(2)}"
        has = f"{found.group(3)}.{found.group(4)}"
        gpu = ctx.gpu[0] if ctx.gpu else f"compute capability {has}"
        if family == "too_old":
            return (Category.GPU_UNSUPPORTED,
                    f"{gpu} (compute capability {has}) is older than the operators need "
                    f"(compute capability {need} or newer)",
                    [sdpa, Remedy(summary=f"Or run on a GPU of compute capability {need} or "
                                  "newer.")])
        return (Category.GPU_UNSUPPORTED,
                f"{gpu} (compute capability {has}) is newer than this xformers release's "
                f"operators accept (at most {need})",
                [Remedy(summary="Upgrade xformers to a release built for this GPU (with the "
                        "torch it requires), or turn xformers off.",
                        commands=['pip install --upgrade xformers --dry-run']), sdpa])
    if family == "smem":
        return (Category.GPU_UNSUPPORTED,
                "xformers' backward kernel for float32 inputs with a head dim over 64 needs more "
                "shared memory than GPUs above the A100's sm80 offer (" + text.strip()[:80] + ")",
                [Remedy(summary="Train in float16 or bfloat16 (mixed precision: the refused kernel "
                        "is the float32 one), or upgrade xformers, whose later releases have "
                        "backward kernels for these GPUs."), sdpa])
    if family == "bf16_old":
        return (Category.DTYPE_UNSUPPORTED,
                "bfloat16 runs only on A100-class GPUs (compute capability 8.0) and newer in "
                "xformers' operators",
                [Remedy(summary="Run in float16 on this GPU (torch_dtype=torch.float16), not "
                        "bfloat16."), sdpa])
    if family == "dtype":
        found = _pattern("dtype").search(text)
        got = found.group(1) if found else (dtype or "this dtype")
        supported = found.group(2) if found else "torch.float16, torch.bfloat16"
        return (Category.DTYPE_UNSUPPORTED,
                f"the inputs are {got}, and the operators take {supported}",
                [Remedy(summary=f"Load and run the model in torch.float16 (or torch.bfloat16 on "
                        f"Ampere and newer), not {got}; with mixed precision, run the attention "
                        "under autocast."), sdpa])
    limit = _limit(lines, ctx)
    said = f"head dim {head_dim}" if head_dim else "the head dim"
    return (Category.HEAD_DIM_UNSUPPORTED,
            f"{said} is outside what the operators take{f' (at most {limit})' if limit else ''}",
            [sdpa, Remedy(summary="Or upgrade xformers: later releases raise the head-dim "
                          "limits of their flash and cutlass operators.")])


def _backward_unlisted(ctx: Context, start: int, op: str) -> List[Signal]:
    """The backward dispatcher's refusal with its reasons cut from the report, on a GPU above
    sm80 that is not an A100 or H100 (sm86, sm89, sm120): xformers' cutlass backward refused
    those for float32 with head dims over 64 (the "smem" reason), the likeliest reason there."""
    cc = ctx.gpu_cc
    if "backward" not in op or ctx.gpu is None or cc is None or \
            not Version("8.0") < cc < Version("13.0") or cc == Version("9.0"):
        return []
    return [Signal("xformers_dispatch", Category.GPU_UNSUPPORTED,
                   f"xformers found no backward attention operator on {ctx.gpu[0]} (compute "
                   f"capability {cc}); the report leaves out the reasons each operator gave, and "
                   "on GPUs above the A100's sm80 xformers' cutlass backward refuses float32 with "
                   "a head dim over 64 (too little shared memory, facebookresearch/xformers#517)",
                   dedupe([ctx.quote(start), ctx.gpu[2]]), IMPLIED,
                   [Remedy(summary="Turn xformers off for training (uninstall xformers, or the "
                           "framework's option for it), so that PyTorch's own attention runs the "
                           "backward; or train in float16/bfloat16, or upgrade xformers.",
                           commands=["pip uninstall -y xformers"]),
                    Remedy(summary="Run `python -m xformers.info` and the failing step again to "
                           "see each operator's reason.", commands=["python -m xformers.info"])],
                   details={"source": SOURCE})]


def _limit(lines: Dict[str, List[int]], ctx: Context) -> Optional[int]:
    """The largest head dim any refusing operator names."""
    limits = [int(m.group(1)) for i in lines.get("head_dim", [])
              for m in [_pattern("head_dim").search(ctx.text.lines[i])] if m and m.group(1)]
    return max(limits) if limits else None


def _torch_of(ctx: Context) -> Optional[str]:
    """The installed torch as xformers' warning states it ("you have 2.2.0+cu121"), else the
    report's."""
    hit = ctx.first(re.compile(r"\(you have (\d+\.\d+\.\d+[\w.+]*)\)"), ("you have",))
    return hit[1].group(1) if hit else (str(ctx.torch) if ctx.torch else None)


# xformers' lookup of a compiled operator (xformers/ops/common.py, get_xformers_operator):
# "No such operator xformers_flash::flash_fwd - did you forget to build xformers with `python
# setup.py develop`?": the operator is not in the binary that loaded. Its setup.py leaves the
# flash operators out when XFORMERS_DISABLE_FLASH_ATTN=1 is set at build time.
_NO_SUCH = re.compile(r"No such operator (xformers\w{0,20})::(\w{1,60})")
_DISABLED = re.compile(r"XFORMERS_DISABLE_FLASH_ATTN=1")


def no_such_operator(ctx: Context) -> List[Signal]:
    hit = ctx.first(_NO_SUCH, ("no such operator",))
    if hit is None:
        return []
    index, found = hit
    op = f"{found.group(1)}::{found.group(2)}"
    disabled = ctx.first(_DISABLED, ("xformers_disable_flash_attn",)) if "flash" in op else None
    if disabled is not None:
        return [Signal("xformers_no_op", Category.NOT_INSTALLED,
                       f"xformers was built with XFORMERS_DISABLE_FLASH_ATTN=1, so its flash "
                       f"operators ({op}) were never compiled into it",
                       dedupe([ctx.quote(index), ctx.quote(disabled[0])]), NAMED,
                       [Remedy(summary="Rebuild xformers without XFORMERS_DISABLE_FLASH_ATTN (or "
                               "set it to 0), with an arch list that includes this GPU; or call "
                               "memory_efficient_attention without forcing the flash operator.")])]
    return [Signal("xformers_no_op", Category.NOT_INSTALLED,
                   f"the xformers binary that loaded has no {op}: it was built without it, or "
                   "its C++/CUDA extension did not load (built for another torch)",
                   [ctx.quote(index)], NAMED,
                   [Remedy(summary="See which operators this xformers has and why others are "
                           "missing, then reinstall the xformers wheel built for this torch.",
                           commands=["python -m xformers.info"])])]


# xformers 0.0.13-0.0.15's dispatcher (xformers/ops.py, AttentionOpDispatch.op: raise
# NotImplementedError(f"No operator found for this attention: {self}")) had three operators: the
# flash one (fp16/bf16, head dim <= 128), a forward-only generic one (fp32/fp16) and the small-k
# one (fp32, head dim <= 32). From 0.0.16 the cutlass operator runs fp32, fp16 and bf16, forward
# and backward, to head dim 65536 (xformers/ops/fmha/cutlass.py FwOp/BwOp, SUPPORTED_MAX_K).
_OLD_DISPATCH = re.compile(r"No operator found for this attention: AttentionOpDispatch\(dtype="
                           r"(torch\.\w{1,20})[^\n]{0,80}?\bk=(\d+)")
_OLD_SOURCE = ("facebookresearch/xformers@v0.0.13:xformers/ops.py (AttentionOpDispatch.op); "
               "@v0.0.16:xformers/ops/fmha/cutlass.py (FwOp, BwOp)")


def old_dispatch(ctx: Context) -> List[Signal]:
    hit = ctx.first(_OLD_DISPATCH, ("no operator found for this attention",))
    if hit is None:
        return []
    dtype, k = hit[1].group(1), int(hit[1].group(2))
    return [Signal("xformers_old_dispatch", Category.VERSION_CONFLICT,
                   f"this xformers (0.0.13 to 0.0.15: its AttentionOpDispatch) has no operator for "
                   f"{dtype} with head dim {k} here: its only training operator in fp32 stops at "
                   "head dim 32, and its flash one takes fp16/bf16 only", [ctx.quote(hit[0])],
                   NAMED,
                   [Remedy(summary="Upgrade xformers to 0.0.16 or later: its cutlass operator runs "
                           "fp32, fp16 and bf16, forward and backward, to head dim 65536 "
                           "(0.0.16's wheels require torch 1.13.1; each later release its own "
                           "torch).", commands=['pip install --upgrade "xformers>=0.0.16"']),
                    Remedy(summary="Or, with this xformers, run attention in float16 or bfloat16 "
                           "(its flash operator, head dim <= 128).")],
                   details={"source": _OLD_SOURCE})]
