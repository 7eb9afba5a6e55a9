"""The smoke-test stage: run one target's cases forward and backward and judge each one.

A case's status is one of: passed; wrong (finite, beyond the tolerance); nonfinite (NaN or Inf);
error (the call raised: the exception, and the phase it raised in); not_applicable (the target's
own eligibility check, or its API, refuses the input: never a failure); skipped (the GPU lacked
the memory, or a previous error left the CUDA context unusable).
"""

import contextlib
import threading
import time
import traceback
import warnings
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from . import cases as grid_
from . import gpu as gpu_
from .calls import Inputs, Sdpa, installed, is_sdpa, load, make_inputs
from .cases import Case
from .judge import attention, judge, packed_attention, reference_finite

_TAIL = 2000
SHRINK_STEPS = (1, 2, 4)  # sequence lengths divided by these, in turn, when memory is short


def setup(target: str, options: Dict[str, Any]) -> Tuple[Any, Any, Dict[str, Any]]:
    """(torch, impl or None, data): torch imported, the device chosen, the target loaded. A
    family that is not installed costs no torch import."""
    if not is_sdpa(target) and not installed(target, options.get("families") or {}):
        return None, None, {"target": target, "installed": False}
    import torch

    data: Dict[str, Any] = {"target": target, "torch": str(torch.__version__)}
    device = options.get("device") or ("cuda" if torch.cuda.is_available() else None)
    data["device"] = device
    if device is None:
        data["skipped"] = "CUDA is not available to torch"
        return torch, None, data
    # The reference must be fp32 arithmetic, whatever the user's defaults: no TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    warming = warm(torch, device) if device == "cuda" and not is_sdpa(target) else None
    try:
        loaded = load(torch, target, options.get("families") or {}, options)
    finally:
        if warming is not None:
            warming.join(WARM_WAIT_S)
    if "impl" not in loaded:
        data.update(loaded)
        return torch, None, data
    return torch, loaded["impl"], data


WARM_WAIT_S = 60.0


def warm_up(torch: Any, device: str) -> None:
    """The process's first CUDA work: the CUDA context, the cuBLAS handle and the reference's
    kernels at a tiny size, forward and backward, in fp32 and bf16."""
    for dtype in (torch.float32, torch.bfloat16):
        q = torch.randn(1, 16, 2, 64, device=device, dtype=dtype, requires_grad=True)
        kv = torch.randn(1, 16, 1, 64, device=device, dtype=dtype, requires_grad=True)
        out = attention(torch, q, kv, kv, True, upcast=dtype == torch.float32)
        torch.autograd.grad(out, (q, kv), torch.ones_like(out))
    if device == "cuda":
        torch.cuda.synchronize()


def warm(torch: Any, device: str) -> threading.Thread:
    """Run `warm_up` on a thread while this one imports the family (a flash-attn-4 import takes
    seconds): torch's operators release the GIL, so it overlaps the import instead of following
    it. Its errors are left for the cases to find and report."""

    def work() -> None:
        with contextlib.suppress(Exception):
            warm_up(torch, device)

    thread = threading.Thread(target=work, name="fadoctor-cuda-warm", daemon=True)
    thread.start()
    return thread


def run(target: str, options: Dict[str, Any]) -> Dict[str, Any]:
    torch, impl, data = setup(target, options)
    data["grid"] = options.get("grid", "default")
    if impl is None:
        return data
    device = data["device"]
    todo = select(grid_.grid(target, options), impl.apis(), data["grid"])
    data["gpu"] = gpu_.state(torch, device)
    todo, data["skipped"], data["shrunk"] = fit(todo, data["gpu"])
    results: List[Dict[str, Any]] = []
    lost = False
    for case in todo:
        if lost:
            results.append(skipped(case, "the CUDA context was lost after an earlier error"))
            continue
        result = run_case(torch, impl, case, device)
        lost = bool(result.pop("lost", False))
        results.append(result)
        if not lost and data["grid"] == "default" and gqa_refused(impl, case, result):
            again = expanded(torch, impl, case, device, result)
            lost = bool(again.pop("lost", False))
            if again["status"] != "not_applicable":  # else not GQA alone was refused
                results.append(again)
        if result["status"] == "passed" and "first_call" not in data:
            data["first_call"] = repeat(torch, impl, case, device, result["seconds"])
    data["cases"] = results
    if lost:
        data["context_lost"] = True
    return data


def gqa_refused(impl: Any, case: Case, result: Dict[str, Any]) -> bool:
    """An SDPA backend's own check refused a GQA case: is it GQA alone it refuses?"""
    return (result["status"] == "not_applicable" and result.get("refused_by") == "check"
            and case.gqa and isinstance(impl, Sdpa) and not impl.expand_kv)


def expanded(torch: Any, impl: Sdpa, case: Case, device: str, refused: Dict[str, Any]
             ) -> Dict[str, Any]:
    """The same case with the key/value heads expanded, so the default set still proves the
    backend (transformers' SDPA path expands them itself where enable_gqa is unusable)."""
    result = run_case(torch, impl.expanded(), case, device)
    result.update(kv_expanded=True, label=case.label() + ", key/value heads expanded",
                  reason="enable_gqa refused: %s" % refused.get("reason"))
    return result


def select(candidates: Sequence[Case], available: Sequence[str], which: str) -> List[Case]:
    """The default set is the first case of an API the target has; the full grid keeps all
    (the ones for missing APIs become not_applicable, which the report shows)."""
    if which == "default":
        usable = [c for c in candidates if c.api in available] or list(candidates)
        return usable[:1]
    return list(candidates)


def fit(todo: List[Case], gpu: Optional[Dict[str, Any]]) -> Tuple[List[Case], Optional[str], int]:
    """Shrink the cases until the largest fits in free memory; (cases, skip reason, factor)."""
    largest = grid_.largest(todo)
    if gpu is None or largest is None:
        return todo, None, 1
    for factor in SHRINK_STEPS:
        case = grid_.shrink([largest], factor)[0]
        need = gpu_.need_mib(case.score_elements(), case.head_dim,
                             case.batch * case.seqlen_k * case.heads)
        if need <= gpu["free_mib"]:
            return grid_.shrink(todo, factor), None, factor
    return [], ("GPU %d has %d MiB free, less than the %d MiB the smallest case needs%s"
                % (gpu["index"], gpu["free_mib"], need,
                   "; " + gpu["busy"] if gpu.get("busy") else "")), 0


def skipped(case: Case, reason: str) -> Dict[str, Any]:
    return {"case": case.as_dict(), "label": case.label(), "status": "skipped", "reason": reason}


def _sync(torch: Any, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


class Outcome(NamedTuple):
    out: Any
    grads: List[Any]
    grad_out: Any  # the upstream gradient the backward pass was given
    no_backward: Optional[str]  # why backward is not applicable, if it is not


def execute(torch: Any, impl: Any, case: Case, x: Inputs, device: str,
            where: Dict[str, str]) -> Outcome:
    """Forward, then backward; `where["phase"]` says how far it got if it raises."""
    with impl.context():
        where["phase"] = "forward"
        out = impl.forward(case, x)
        _sync(torch, device)
        if not case.backward:
            return Outcome(out, [], None, None)
        if out.grad_fn is None:
            return Outcome(out, [], None, "the function returns no gradient (inference only)")
        where["phase"] = "backward"
        torch.manual_seed(1)
        grad_out = torch.randn_like(out)
        grads = list(torch.autograd.grad(out, (x.q, x.k, x.v), grad_out))
        _sync(torch, device)
    where["phase"] = "judge"
    return Outcome(out, grads, grad_out, None)


def run_case(torch: Any, impl: Any, case: Case, device: str) -> Dict[str, Any]:
    result: Dict[str, Any] = {"case": case.as_dict(), "label": case.label()}
    where = {"phase": "setup"}
    warned: List[str] = []
    start = time.perf_counter()
    try:
        x = make_inputs(torch, case, device)
        why = impl.not_applicable(case, x, device)
        if why is not None:
            result.update(status="not_applicable", reason=why, refused_by="check")
            return result
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                done = execute(torch, impl, case, x, device, where)
            finally:
                warned = [str(w.message) for w in caught]
        result["seconds"] = round(time.perf_counter() - start, 4)
        return judged(torch, case, x, done, result)
    except Exception as exc:
        return failed(torch, device, exc, result, where["phase"], warned)


def failed(torch: Any, device: str, exc: BaseException, result: Dict[str, Any], phase: str,
           warned: List[str]) -> Dict[str, Any]:
    text = ("%s" % exc).strip()
    if "No available kernel" in text or "No viable backend" in text:
        # The SDPA dispatcher refused the input before any kernel ran (CUDA / CPU wording).
        reasons = [w.strip() for w in warned if w.strip()]
        result.update(status="not_applicable", reason="; ".join(reasons) or text[:_TAIL],
                      refused_by="dispatcher")
        return result
    if type(exc).__name__ == "OutOfMemoryError" or "out of memory" in text:
        result.update(status="skipped", reason="out of GPU memory: %s" % text[:_TAIL], oom=True)
        return result
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    result.update(status="error", phase=phase, exception_type=type(exc).__name__,
                  message=text[:_TAIL], traceback_tail=tb[-_TAIL:], lost=context_lost(torch,
                                                                                      device))
    return result


def context_lost(torch: Any, device: str) -> bool:
    """After an error: can this process still run CUDA work? (An illegal address is sticky.)"""
    if device != "cuda":
        return False
    try:
        torch.cuda.synchronize()
        return float(torch.ones(1, device="cuda").add_(1).item()) != 2.0
    except Exception:
        return True


def references(torch: Any, case: Case, x: Inputs, grad_out: Any) -> Tuple[List[Any], List[Any]]:
    """(fp32 reference, same-dtype PyTorch implementation): output then gradients of each."""
    out = []
    for upcast, reorder in ((True, False), (False, True)):
        if case.api == "varlen":
            o = packed_attention(torch, x.q, x.k, x.v, x.lengths, case.causal, upcast, reorder)
        else:
            o = attention(torch, x.q, x.k, x.v, case.causal, upcast, reorder)
        grads = list(torch.autograd.grad(o, (x.q, x.k, x.v), grad_out)) if grad_out is not None \
            else []
        out.append([o.detach()] + grads)
    return out[0], out[1]


def judged(torch: Any, case: Case, x: Inputs, done: Outcome, result: Dict[str, Any]
           ) -> Dict[str, Any]:
    ref, pt = references(torch, case, x, done.grad_out)
    bad = reference_finite(torch, ref)
    if bad is not None:
        result.update(status="error", phase="judge", message=bad)
        return result
    names = ["out", "dq", "dk", "dv"][:1 + len(done.grads)]
    got = [done.out.detach()] + done.grads
    result["status"], result["errors"] = judge(torch, got, ref, pt, names)
    if done.no_backward is not None:
        result["backward"] = done.no_backward
    return result


def repeat(torch: Any, impl: Any, case: Case, device: str, first: float) -> Dict[str, Any]:
    """The first passing case once more: its first call paid lazy loading or JIT compilation."""
    x = make_inputs(torch, case, device)
    start = time.perf_counter()
    execute(torch, impl, case, x, device, {})
    return {"label": case.label(), "first_s": first,
            "repeat_s": round(time.perf_counter() - start, 4)}
