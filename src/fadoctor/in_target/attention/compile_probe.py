"""The torch.compile stage: a small attention module calling one target, compiled fullgraph.

Reports whether `torch.compile(fullgraph=True)` compiles and runs it forward and backward (and
gives the eager result), the graph breaks `torch._dynamo.explain` finds with their reasons, and
the torch.library custom ops the installed families registered (flash-attn registers
flash_attn::* from v2.7.0 on torch >= 2.4, which is what lets Dynamo trace it).

The compile caches (Inductor, Triton, CuTe DSL) go where the parent pointed them: a temporary
folder it removes afterwards.
"""

import time
import traceback
from typing import Any, Dict, List, Optional

from . import cases as grid_
from .calls import make_inputs
from .judge import FORWARD_MULTIPLE, attention, compare
from .smoke import setup

_TAIL = 2000
COMPILE_SHAPE = {"batch": 1, "seqlen": 256, "heads": 8, "kv_heads": 2}
OP_NAMESPACES = ("flash_attn", "vllm")  # namespaces of the families' torch.library ops


def custom_ops(torch: Any) -> Optional[List[str]]:
    """The registered operators in a flash-attention namespace (flash_attn::_flash_attn_forward)."""
    names = getattr(torch._C, "_dispatch_get_all_op_names", None)
    if names is None:
        return None
    found = set()
    for name in names():
        namespace = str(name).split("::", 1)[0]
        if any(ns in namespace for ns in OP_NAMESPACES):
            found.add(str(name).split(".", 1)[0])
    return sorted(found)


def _error(exc: BaseException) -> Dict[str, Any]:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"exception_type": type(exc).__name__, "message": ("%s" % exc).strip()[:_TAIL],
            "traceback_tail": tb[-_TAIL:]}


def _explain_once(torch: Any, module: Any, args: List[Any]) -> Any:
    torch._dynamo.reset()
    try:
        return torch._dynamo.explain(module)(*args)
    except TypeError:  # torch 2.0: explain(f, *args)
        return torch._dynamo.explain(module, *args)


def explain(torch: Any, module: Any, args: List[Any]) -> Dict[str, Any]:
    """Dynamo's graphs and graph breaks for one call, with each break's reason. Asked twice: the
    first explain of a process can report one graph and no break where there is one (seen with
    torch 2.13 on a frame Dynamo restarts after the break)."""
    try:
        _explain_once(torch, module, args)
        result = _explain_once(torch, module, args)
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}
    reasons = []
    for item in getattr(result, "break_reasons", None) or []:
        reasons.append(str(getattr(item, "reason", item)).strip()[:_TAIL])
    return {"ok": True, "graph_count": getattr(result, "graph_count", None),
            "graph_break_count": getattr(result, "graph_break_count", None),
            "break_reasons": reasons}


def run(target: str, options: Dict[str, Any]) -> Dict[str, Any]:
    torch, impl, data = setup(target, options)
    if impl is None:
        return data
    device = data["device"]
    data["custom_ops"] = custom_ops(torch)
    case = grid_.make(impl.apis()[0] if impl.apis() else "func", "bfloat16", True, True, 128,
                      dict(COMPILE_SHAPE))
    if case.api != "func" and case.api != "sdpa":
        data["skipped"] = "the target has no flash_attn_func to compile"
        return data
    x = make_inputs(torch, case, device)
    why = impl.not_applicable(case, x, device)
    if why is not None:
        data["skipped"] = why
        return data

    class Attention(torch.nn.Module):  # type: ignore[misc,name-defined]
        def forward(self, q: Any, k: Any, v: Any) -> Any:
            return impl.forward(case, x._replace(q=q, k=k, v=v))

    module = Attention()
    with impl.context():
        data["explain"] = explain(torch, module, [x.q, x.k, x.v])
        data["fullgraph"] = fullgraph(torch, module, case, x, options)
    return data


def fullgraph(torch: Any, module: Any, case: Any, x: Any, options: Dict[str, Any]
              ) -> Dict[str, Any]:
    """Compile with fullgraph=True, run forward and backward, judge against the reference."""
    torch._dynamo.reset()
    backend = options.get("compile_backend", "inductor")
    start = time.perf_counter()
    try:
        compiled = torch.compile(module, fullgraph=True, backend=backend)
        out = compiled(x.q, x.k, x.v)
        out.backward(torch.ones_like(out))
        if x.q.is_cuda:
            torch.cuda.synchronize()
    except Exception as exc:
        return {"ok": False, "backend": backend, "seconds": round(time.perf_counter() - start, 3),
                "error": _error(exc)}
    with torch.no_grad():
        ref = attention(torch, x.q, x.k, x.v, case.causal)
        pt = attention(torch, x.q, x.k, x.v, case.causal, upcast=False, reorder=True)
        check = compare(torch, "out", out.detach(), ref, pt, FORWARD_MULTIPLE)
    return {"ok": True, "backend": backend, "seconds": round(time.perf_counter() - start, 3),
            "correct": check["ok"], "check": check}
