"""How each target is called: PyTorch SDPA with one backend forced, or a flash-attention family.

Every target takes q (batch, seqlen_q, heads, dim) and k, v (batch, seqlen_k, kv_heads, dim)
(varlen: packed (tokens, heads, dim)) and returns the output in q's layout, so that one harness
and one reference serve all of them.
"""

import contextlib
import importlib
import importlib.util
import inspect
import re
import warnings
from typing import Any, ContextManager, Dict, List, NamedTuple, Optional, Tuple

from . import jitcache
from .cases import FUNCTIONS, Case, apis

# SDPA backend -> (SDPBackend member, torch.backends.cuda eligibility check, old switch keyword).
SDPA_BACKENDS = {
    "flash": ("FLASH_ATTENTION", "can_use_flash_attention", "enable_flash"),
    "efficient": ("EFFICIENT_ATTENTION", "can_use_efficient_attention", "enable_mem_efficient"),
    "cudnn": ("CUDNN_ATTENTION", "can_use_cudnn_attention", "enable_cudnn"),
    "math": ("MATH", None, "enable_math"),
}
# Keywords each family function must accept for the harness to call it.
KEYWORDS = {"func": ("causal",), "kvcache": ("cache_seqlens", "causal"),
            "varlen": ("cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k", "causal")}


class Inputs(NamedTuple):
    q: Any
    k: Any
    v: Any
    lengths: List[int]  # varlen: each sequence's length
    cu_seqlens: Any  # varlen: int32 cumulative lengths; kvcache: per-sequence cache lengths
    max_seqlen: int


def version_tuple(text: str) -> Tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def make_inputs(torch: Any, case: Case, device: str, seed: int = 0) -> Inputs:
    torch.manual_seed(seed)
    dtype = getattr(torch, case.dtype)
    grad = case.backward

    def randn(*shape: int) -> Any:
        return torch.randn(*shape, device=device, dtype=dtype).requires_grad_(grad)

    if case.api == "varlen":
        lengths = case.varlen_lengths()
        total = sum(lengths)
        offsets = [0]
        for n in lengths:
            offsets.append(offsets[-1] + n)
        cu = torch.tensor(offsets, dtype=torch.int32, device=device)
        return Inputs(randn(total, case.heads, case.head_dim),
                      randn(total, case.kv_heads, case.head_dim),
                      randn(total, case.kv_heads, case.head_dim), lengths, cu, max(lengths))
    q = randn(case.batch, case.seqlen_q, case.heads, case.head_dim)
    k = randn(case.batch, case.seqlen_k, case.kv_heads, case.head_dim)
    v = randn(case.batch, case.seqlen_k, case.kv_heads, case.head_dim)
    cache = torch.full((case.batch,), case.seqlen_k, dtype=torch.int32, device=device)
    return Inputs(q, k, v, [], cache, case.seqlen_k)


class Sdpa:
    """torch.nn.functional.scaled_dot_product_attention with one backend forced (or, with
    backend None, torch's own choice)."""

    def __init__(self, torch: Any, backend: Optional[str], expand_kv: bool = False) -> None:
        self.torch = torch
        self.backend = backend
        self.version = version_tuple(str(torch.__version__))
        # GQA without enable_gqa: the key/value heads repeated to the query heads first
        # (repeat_interleave), as transformers' SDPA path does when it cannot use enable_gqa.
        self.expand_kv = expand_kv

    def expanded(self) -> "Sdpa":
        return Sdpa(self.torch, self.backend, expand_kv=True)

    def _bhsd(self, case: Case, x: Inputs) -> Tuple[Any, Any, Any, bool]:
        """q, k, v in SDPA's (batch, heads, seqlen, dim) layout, and whether to ask for GQA."""
        q, k, v = (t.transpose(1, 2) for t in (x.q, x.k, x.v))
        if case.gqa and self.expand_kv:
            groups = case.heads // case.kv_heads
            return q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1), False
        return q, k, v, case.gqa

    def apis(self) -> Tuple[str, ...]:
        return ("sdpa",)

    def context(self) -> ContextManager[Any]:
        if self.backend is None:
            return contextlib.nullcontext()
        torch, (member, _, switch) = self.torch, SDPA_BACKENDS[self.backend]
        attention = getattr(torch.nn, "attention", None)
        if attention is not None and hasattr(attention, "sdpa_kernel"):  # torch >= 2.3
            forced: ContextManager[Any] = attention.sdpa_kernel(
                [getattr(attention.SDPBackend, member)])
            return forced
        kwargs = {s: s == switch for _, _, s in SDPA_BACKENDS.values() if s != "enable_cudnn"}
        legacy: ContextManager[Any] = torch.backends.cuda.sdp_kernel(**kwargs)
        return legacy

    def not_applicable(self, case: Case, x: Inputs, device: str) -> Optional[str]:
        """Why SDPA would refuse this input with this backend (its own eligibility check)."""
        torch = self.torch
        if case.gqa and not self.expand_kv and self.version < (2, 5):
            return "SDPA of torch %s has no enable_gqa (it came in 2.5)" % torch.__version__
        if self.backend is None:
            return None
        if device != "cuda" and self.backend != "math":
            return "the %s backend runs on CUDA tensors; this run is on %s" % (self.backend, device)
        attention = getattr(torch.nn, "attention", None)
        if self.backend == "cudnn" and not hasattr(attention, "sdpa_kernel"):
            return "torch %s cannot force SDPA's cuDNN backend" % torch.__version__
        check = SDPA_BACKENDS[self.backend][1]
        fn = getattr(torch.backends.cuda, check, None) if check else None
        if fn is None or not hasattr(torch.backends.cuda, "SDPAParams"):
            return None  # no check to ask: the call itself says "No available kernel"
        q, k, v, gqa = self._bhsd(case, x)
        args = [q, k, v, None, 0.0, case.causal] + ([gqa] if self.version >= (2, 5) else [])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ok = bool(fn(torch.backends.cuda.SDPAParams(*args), True))
        if ok:
            return None
        reasons = [str(w.message).strip() for w in caught]
        return "; ".join(r for r in reasons if r) or "torch.backends.cuda.%s said no" % check

    def forward(self, case: Case, x: Inputs) -> Any:
        q, k, v, gqa = self._bhsd(case, x)
        kwargs: Dict[str, Any] = {"is_causal": case.causal}
        if gqa:
            kwargs["enable_gqa"] = True
        out = self.torch.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)
        return out.transpose(1, 2)


class Family:
    """A flash-attention family's functions, called with the keywords every release takes."""

    def __init__(self, torch: Any, name: str, module: Any) -> None:
        self.torch = torch
        self.name = name
        self.module = module
        self.functions: Dict[str, Any] = {api: getattr(module, FUNCTIONS[api], None)
                                          for api in apis(name)}

    def apis(self) -> Tuple[str, ...]:
        return tuple(api for api, fn in self.functions.items() if fn is not None)

    def context(self) -> ContextManager[Any]:
        return contextlib.nullcontext()

    def not_applicable(self, case: Case, x: Inputs, device: str) -> Optional[str]:
        fn = self.functions.get(case.api)
        if fn is None:
            return "%s has no %s" % (self.module.__name__, FUNCTIONS[case.api])
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return None  # a builtin without a signature: call it and see
        if any(p.kind == p.VAR_KEYWORD for p in params.values()):
            return None
        lacking = [kw for kw in KEYWORDS[case.api] if kw not in params]
        if lacking:
            return "%s.%s takes no %s" % (self.module.__name__, FUNCTIONS[case.api],
                                          ", ".join(lacking))
        return None

    def forward(self, case: Case, x: Inputs) -> Any:
        fn = self.functions[case.api]
        if case.api == "varlen":
            out = fn(x.q, x.k, x.v, cu_seqlens_q=x.cu_seqlens, cu_seqlens_k=x.cu_seqlens,
                     max_seqlen_q=x.max_seqlen, max_seqlen_k=x.max_seqlen, causal=case.causal)
        elif case.api == "kvcache":
            out = fn(x.q, x.k, x.v, cache_seqlens=x.cu_seqlens, causal=case.causal)
        else:
            out = fn(x.q, x.k, x.v, causal=case.causal)
        # FA3 and FA4 return (out, lse); FA2 returns out unless asked for more.
        return out[0] if isinstance(out, (tuple, list)) else out


def is_sdpa(target: str) -> bool:
    return target == "sdpa" or target.startswith("sdpa_")


def installed(target: str, families: Dict[str, Any]) -> bool:
    """Whether a family is installed, by its distributions or marker modules (nothing imported)."""
    return _installed(families.get(target) or {})


def _installed(spec: Dict[str, Any]) -> bool:
    from importlib import metadata

    for dist in spec.get("distributions", []):
        try:
            metadata.distribution(dist)
            return True
        except metadata.PackageNotFoundError:
            continue
    for marker in spec.get("markers", []):
        try:
            if importlib.util.find_spec(marker) is not None:
                return True
        except (ImportError, ValueError):
            continue
    return False


def load(torch: Any, target: str, families: Dict[str, Any],
         options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """{"impl": Sdpa | Family} or {"installed": False} or {"import_error": "..."}.

    `families` is the worker's table of families (distributions, modules, markers), passed by
    the parent so that both sides agree on what "installed" means. With `options` naming a
    compile cache, a family that has one uses it (`jitcache`)."""
    if is_sdpa(target):
        return {"impl": Sdpa(torch, target[len("sdpa_"):] or None)}
    spec = families.get(target) or {}
    if not _installed(spec):
        return {"installed": False}
    jitcache.enable(torch, target, spec, options or {})
    error: Optional[BaseException] = None
    for name in spec.get("modules", []):
        try:
            return {"impl": Family(torch, target, importlib.import_module(name))}
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue  # this spelling of the module is absent; try the next
            error = exc
            break
        except Exception as exc:  # the import check (FAD111) reports it in full
            error = exc
            break
    if error is None:
        return {"installed": False}
    return {"import_error": "%s: %s" % (type(error).__name__, error)}
