"""The bench step's independent timing and its comparison with `fadoctor bench` (gpu_kernels.py).

The independent side times the same targets at the same shape in another process two ways: the
kernel durations the GPU recorded (torch.profiler's device records, from CUPTI: no host time, no
CUDA events; the median call; the verdict) and triton.testing.do_bench's median (for the record:
it times with CUDA events after an L2 flush, like fadoctor, but without fadoctor's GPU head
start, so it also counts host launch time that the GPU waits for).
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Dict, List, Optional

TOLERANCE = 0.05


def _entry(ours: float, kernel: Optional[float], do_bench: Optional[float]) -> Dict[str, Any]:
    def diff(other: Optional[float]) -> Optional[float]:
        return round((ours - other) / other * 100, 2) if other else None

    d = diff(kernel)
    return {"fadoctor_ms": ours, "kernel_ms": kernel, "do_bench_ms": do_bench,
            "vs_kernel_pct": d, "vs_do_bench_pct": diff(do_bench),
            "within_5pct": d is not None and abs(d) <= TOLERANCE * 100}


def compare(report: Dict[str, Any], independent: Dict[str, Any]) -> Dict[str, Any]:
    """fadoctor's medians against the kernel time (the verdict) and do_bench (for the record).
    The ranking is compared where the two differ by more than the tolerance (closer is a tie)."""
    rows = {r["target"]: r for r in report["rows"] if r["status"] == "timed"}
    out: Dict[str, Any] = {"targets": {}}
    for target, row in rows.items():
        theirs = independent.get(target) or {}
        out["targets"][target] = {
            mode: _entry(row[mode]["median_ms"], (theirs.get("kernel") or {}).get(mode),
                         (theirs.get("do_bench") or {}).get(mode))
            for mode in ("fwd", "fwd_bwd")}
    ours = {t: rows[t]["fwd_bwd"]["median_ms"] for t in rows}
    kernel = {t: e["fwd_bwd"]["kernel_ms"] for t, e in out["targets"].items()
              if e["fwd_bwd"]["kernel_ms"]}
    out.update(ranking_fadoctor=sorted(ours, key=ours.__getitem__),
               ranking_kernel=sorted(kernel, key=kernel.__getitem__),
               ranking_conflicts=conflicts(ours, kernel),
               recommendation=report.get("recommendation"))
    out["ok"] = (bool(rows) and len(kernel) == len(rows) and not out["ranking_conflicts"]
                 and all(e[m]["within_5pct"] for e in out["targets"].values() for m in e))
    return out


def conflicts(ours: Dict[str, float], other: Dict[str, float]) -> List[str]:
    """Pairs that both timings separate by more than the tolerance, in opposite orders."""
    found = []
    names = sorted(set(ours) & set(other))
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            x, y = ours[a] / ours[b], other[a] / other[b]
            if abs(x - 1) > TOLERANCE and abs(y - 1) > TOLERANCE and (x > 1) != (y > 1):
                found.append(f"{a} vs {b}")
    return found


def comparison_lines(result: Dict[str, Any]) -> List[str]:
    lines = []
    for target, entry in (result.get("targets") or {}).items():
        for mode, e in entry.items():
            lines.append(f"bench {target} {mode}: fadoctor {e['fadoctor_ms']} ms, kernel time "
                         f"{e['kernel_ms']} ms ({e['vs_kernel_pct']}%), do_bench "
                         f"{e['do_bench_ms']} ms ({e['vs_do_bench_pct']}%)"
                         f"{'' if e['within_5pct'] else '  OUTSIDE 5%'}")
    lines.append(f"bench ranking: fadoctor {result.get('ranking_fadoctor')}, kernel time "
                 f"{result.get('ranking_kernel')}, conflicts {result.get('ranking_conflicts')}")
    return lines


def independent_timing(report: Dict[str, Any]) -> Dict[str, Any]:
    """The same targets and shape, in this process: kernel durations as the GPU recorded them
    (torch.profiler, CUPTI), and triton.testing.do_bench's median."""
    import torch

    from fadoctor.in_target.attention import calls, cases
    from fadoctor.in_target.tables import FAMILIES

    shape = report["shape"]
    options = {"shape": {k: shape[k] for k in ("batch", "seqlen", "heads", "kv_heads")},
               "head_dim": shape["head_dim"], "causal": shape["causal"], "dtype": shape["dtype"]}
    out: Dict[str, Any] = {}
    for row in report["rows"]:
        if row["status"] != "timed":
            continue
        impl = calls.load(torch, row["target"], FAMILIES)["impl"]
        case = cases.single(options, "sdpa" if row["target"].startswith("sdpa") else "func")
        x = calls.make_inputs(torch, case, "cuda")
        out[row["target"]] = _time_target(torch, impl, case, x)
    return out


def _time_target(torch: Any, impl: Any, case: Any, x: Any) -> Dict[str, Any]:
    def forward() -> Any:
        with impl.context():
            return impl.forward(case, x)

    grad = torch.randn_like(forward())

    def forward_backward() -> None:
        out = forward()
        with impl.context():
            out.backward(grad)

    fns = {"fwd": forward, "fwd_bwd": forward_backward}
    result: Dict[str, Any] = {"kernel": {}, "do_bench": {}}
    for mode, fn in fns.items():
        result["kernel"][mode] = _kernel_ms(torch, fn, x)
        result["do_bench"][mode] = _do_bench(fn, x)
    return result


def _reset(x: Any) -> None:
    for t in (x.q, x.k, x.v):
        t.grad = None


MARKER = "spin_kernel"  # torch.cuda._sleep's kernel (aten/src/ATen/cuda/Sleep.cu)


def _kernel_ms(torch: Any, fn: Callable[[], Any], x: Any, reps: int = 15) -> Optional[float]:
    """The median over `reps` calls of the summed durations of the kernels (and device memsets
    and copies) each call ran, from the profiler's device records: no host time, no events. A
    short torch.cuda._sleep kernel before each call marks where one call's records end and the
    next one's begin (it is not counted), so that a one-off kernel (a workspace set up once) moves
    one sample, not the mean."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        _reset(x)
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            _reset(x)
            torch.cuda._sleep(1000)
            fn()
        torch.cuda.synchronize()
    records = sorted((e.start_ns(), e.duration_ns(), e.name())
                     for e in prof.profiler.kineto_results.events()
                     if e.device_type() == DeviceType.CUDA and not e.is_user_annotation())
    calls: List[int] = []
    for _start, duration, name in records:
        if MARKER in name:
            calls.append(0)
        elif calls:
            calls[-1] += duration
    if len(calls) != reps:  # no markers recorded: the mean over all records
        total = sum(d for _s, d, name in records if MARKER not in name)
        return round(total / 1e6 / reps, 5) if total else None
    return round(statistics.median(calls) / 1e6, 5)


def _do_bench(fn: Callable[[], Any], x: Any) -> Optional[float]:
    try:
        import triton.testing
    except ImportError:
        return None
    return float(triton.testing.do_bench(fn, warmup=25, rep=100, grad_to_none=[x.q, x.k, x.v],
                                         return_mode="median"))
