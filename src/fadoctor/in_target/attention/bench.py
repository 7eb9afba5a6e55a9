"""The bench stage: time one target at the user's shape, forward and forward+backward.

A target is timed only once it passed a smoke test at the same dtype, causal setting, heads and
head dim (on a shorter sequence, so that the fp32 reference stays small): a fast wrong kernel is
never a candidate. Timing: CUDA events around each call after warm-up, the L2 cache flushed
before each call by writing a buffer larger than it, the median of the repetitions. Before each
call the GPU first spins for a while (torch.cuda._sleep), so that the host has queued the whole
call before the first event fires: the events then time the GPU's work, not the host's launch
overhead (flash-attn-4's Python launch path costs a sizeable part of a 0.4 ms forward). The first
call of the process (flash-attn-4 compiles its kernels then) is timed apart.

FLOPs are counted as flash-attention's benchmarks count them (Dao-AILab/flash-attention
benchmarks/benchmark_flash_attention.py at v2.8.3, flops(), lines 27-30): forward
4 * batch * seqlen^2 * heads * head_dim, halved when causal; forward+backward 3.5x that.
"""

import statistics
import time
from typing import Any, Callable, Dict, List, Optional

from . import cases as grid_
from .calls import Inputs, make_inputs
from .smoke import execute, run_case, setup

DEFAULT_REPS = 30
DEFAULT_WARMUP = 5
CHECK_SEQLEN = 1024  # the smoke check's sequence length, at most
MIN_FLUSH_BYTES = 256 * 1024 * 1024  # when torch cannot say how large the L2 is
SPIN_CYCLES = 4_000_000  # the GPU's head start before each timed call: about 2 ms at 2 GHz


def flops(case: grid_.Case, mode: str) -> float:
    f = 4.0 * case.batch * case.seqlen_q * case.seqlen_k * case.heads * case.head_dim
    f /= 2 if case.causal else 1
    return f if mode == "fwd" else 3.5 * f


def flush_buffer(torch: Any, device: str) -> Any:
    if device != "cuda":
        return None
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    size = max(2 * l2, 64 * 1024 * 1024) if l2 else MIN_FLUSH_BYTES
    return torch.empty(size // 4, dtype=torch.int32, device=device)


def timed(torch: Any, fn: Callable[[], Any], reps: int, device: str, flush: Any,
          reset: Callable[[], None]) -> List[float]:
    """Milliseconds of each of `reps` calls: CUDA events on a GPU, the clock on a CPU."""
    samples: List[float] = []
    if device != "cuda":
        for _ in range(reps):
            reset()
            start = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - start) * 1000.0)
        return samples
    events = []
    for _ in range(reps):
        reset()
        spin = getattr(torch.cuda, "_sleep", None)
        if spin is not None:
            spin(SPIN_CYCLES)
        flush.zero_()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        events.append((begin, end))
    torch.cuda.synchronize()
    return [float(b.elapsed_time(e)) for b, e in events]


def callables(torch: Any, impl: Any, case: grid_.Case, x: Inputs) -> Dict[str, Any]:
    grad_out = None

    def forward() -> Any:
        with impl.context():
            return impl.forward(case, x)

    def forward_backward() -> None:
        nonlocal grad_out
        out = forward()
        if grad_out is None:
            grad_out = torch.randn_like(out)
        with impl.context():
            out.backward(grad_out)

    def reset() -> None:
        for t in (x.q, x.k, x.v):
            t.grad = None

    return {"fwd": forward, "fwd_bwd": forward_backward, "reset": reset}


def measure(torch: Any, impl: Any, case: grid_.Case, device: str, reps: int, warmup: int
            ) -> Dict[str, Any]:
    x = make_inputs(torch, case, device)
    fns = callables(torch, impl, case, x)
    flush = flush_buffer(torch, device)
    out: Dict[str, Any] = {}
    for mode in ("fwd", "fwd_bwd"):
        for _ in range(warmup):
            fns["reset"]()
            fns[mode]()
        samples = timed(torch, fns[mode], reps, device, flush, fns["reset"])
        median = statistics.median(samples)
        out[mode] = {"median_ms": round(median, 5), "min_ms": round(min(samples), 5),
                     "max_ms": round(max(samples), 5), "reps": reps,
                     "tflops": float("%.4g" % (flops(case, mode) / (median * 1e-3) / 1e12))}
    return out


def first_call(torch: Any, impl: Any, case: grid_.Case, device: str) -> Optional[float]:
    """Seconds of the process's first forward+backward call: flash-attn-4 compiles then."""
    x = make_inputs(torch, case, device)
    start = time.perf_counter()
    try:
        execute(torch, impl, case, x, device, {})
    except Exception:
        return None  # the smoke check that follows reports the error
    return round(time.perf_counter() - start, 4)


def run(target: str, options: Dict[str, Any]) -> Dict[str, Any]:
    if target == "hf":
        return transformers_attention()
    torch, impl, data = setup(target, options)
    if impl is None:
        return data
    device = data["device"]
    if device == "cuda":
        data["device_name"] = str(torch.cuda.get_device_name(torch.cuda.current_device()))
    api = "sdpa" if target.startswith("sdpa_") else "func"
    case = grid_.single(options, api)
    data["case"] = case.as_dict()
    check_case = grid_.shrink([case._replace(batch=1)], max(1, case.seqlen_k // CHECK_SEQLEN))[0]
    data["first_call_s"] = first_call(torch, impl, check_case, device)
    data["check"] = check = run_case(torch, impl, check_case, device)
    if check["status"] != "passed":
        data["skipped"] = "its smoke test at this configuration did not pass (%s)" % check["status"]
        return data
    reps = int(options.get("reps", DEFAULT_REPS))
    data["timing"] = measure(torch, impl, case, device, reps,
                             int(options.get("warmup", DEFAULT_WARMUP)))
    return data


def transformers_attention() -> Dict[str, Any]:
    """The attention implementations the installed transformers registers, by name."""
    try:
        import transformers
    except Exception as exc:
        return {"installed": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    names: Optional[List[str]] = None
    interface = getattr(transformers, "AttentionInterface", None)
    mapping = getattr(interface, "_global_mapping", None) if interface is not None else None
    if isinstance(mapping, dict):
        names = sorted(str(k) for k in mapping) + ["eager"]
    return {"installed": True, "version": str(getattr(transformers, "__version__", "")),
            "attn_implementations": names}
