"""Stage `sdpa`: which of torch's scaled-dot-product-attention backends are compiled, enabled and
usable for a representative bf16 training shape."""

import warnings
from typing import Any, Dict, List, Optional, Tuple

from .context import Context
from .torch_facts import warning_texts

SWITCHES = {"flash": "flash_sdp_enabled", "efficient": "mem_efficient_sdp_enabled",
            "cudnn": "cudnn_sdp_enabled", "math": "math_sdp_enabled"}
CAN_USE = {"flash": "can_use_flash_attention", "efficient": "can_use_efficient_attention",
           "cudnn": "can_use_cudnn_attention"}


def _sdpa_params(torch: Any, q: Any, k: Any, v: Any) -> Any:
    cls = torch.backends.cuda.SDPAParams
    try:  # torch >= 2.5: (query, key, value, mask, dropout, is_causal, enable_gqa)
        return cls(q, k, v, None, 0.0, True, False)
    except TypeError:  # torch 2.2-2.4
        return cls(q, k, v, None, 0.0, True)


def _can_use(torch: Any, fn_name: str, params: Any) -> Tuple[Optional[bool], List[str]]:
    fn = getattr(torch.backends.cuda, fn_name, None)
    if fn is None:
        return None, ["torch %s has no torch.backends.cuda.%s" % (torch.__version__, fn_name)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ok = bool(fn(params, True))
    return ok, [] if ok else warning_texts(caught)


def run(context: Context) -> Dict[str, Any]:
    with context.importing("torch"):
        import torch

    cuda = torch.backends.cuda
    compiled = {"flash": getattr(cuda, "is_flash_attention_available", None)}
    params, why_not = None, None
    if torch.cuda.is_available() and torch.version.cuda and hasattr(cuda, "SDPAParams"):
        # A representative training shape: bf16, batch 1, 8 heads, 128 tokens, head dim 64.
        shape = (1, 8, 128, 64)
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        params = _sdpa_params(torch, q, k, v)
    elif not torch.cuda.is_available():
        why_not = "CUDA is not available to torch"
    else:
        why_not = "torch %s cannot report SDPA backend eligibility" % torch.__version__
    backends = []
    for name in ("flash", "efficient", "cudnn", "math"):
        switch = getattr(cuda, SWITCHES[name], None)
        entry = {"name": name, "enabled": bool(switch()) if switch else None,
                 "reasons": []}  # type: Dict[str, Any]
        fn = compiled.get(name)
        entry["compiled"] = bool(fn()) if fn else None
        if name == "math":
            entry["usable"] = entry["enabled"]
        elif params is not None:
            entry["usable"], entry["reasons"] = _can_use(torch, CAN_USE[name], params)
        else:
            entry["usable"], entry["reasons"] = None, [why_not]
        backends.append(entry)
    return {"sdpa": backends}
