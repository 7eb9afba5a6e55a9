"""Stage `transformers`: what the installed transformers really runs for each `attn_implementation`.

Rather than restate transformers' availability rules and fallbacks (they change with nearly every
release: flash_attention_2's Hub-kernel fallback came in 4.56, flash_attention_3's in 4.57,
flash_attention_4 in 5.x), this asks the installed release itself: it builds a tiny Llama
model on the meta device through `AutoModelForCausalLM.from_config(config,
attn_implementation=NAME)` — the same decision code from_pretrained runs — and records what
the model ended up with, or the exception transformers raised, with its message, plus what
transformers logged.

Nothing leaves the machine: while a model is built, an audit hook refuses every socket connection
(and name lookup), and `kernels.get_kernel` is wrapped to record which Hub repository transformers
asked for. A fallback that would download code therefore shows as "asked for kernel X, needed the
network" instead of being downloaded. Standard library only at import, Python 3.8 syntax.
"""

import contextlib
import logging
import sys
from typing import Any, Dict, List, Optional, Set

from .context import Context

# Names a user may pass, in the order reported. flash_attention_4 is asked only of a release that
# knows it; Hub kernel names are asked as given (the releases that take them use `kernels`).
REQUESTS = ("sdpa", "flash_attention_2", "flash_attention_3", "flash_attention_4",
            "kernels-community/flash-attn2", "kernels-community/vllm-flash-attn3")
KNOWN_ONLY = ("flash_attention_4",)
TAIL = 600  # characters kept of a message

# The tiny model: two layers, nothing a real config would need to download.
CONFIG = {"vocab_size": 128, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128}


class NetworkRefused(ConnectionError):
    """Raised by the audit hook in place of a connection: fadoctor never lets a probe download."""


class Guard:
    """Refuses network access while on; records each attempt and each Hub kernel asked for."""

    def __init__(self) -> None:
        self.on = False
        self.attempts = []  # type: List[str]
        self.kernels = []  # type: List[str]

    def audit(self, event: str, args: Any) -> None:
        if not self.on or event not in ("socket.connect", "socket.getaddrinfo"):
            return
        where = args[1] if event == "socket.connect" else args[0]
        self.attempts.append("%s %s" % (event, where))
        raise NetworkRefused("fadoctor refused a network connection (%s) while probing" % event)

    def wrap_kernels(self) -> Optional[str]:
        """Record the repository of each `kernels.get_kernel` call (transformers' Hub loader)."""
        try:
            import kernels
        except Exception as exc:
            return "%s: %s" % (type(exc).__name__, exc)
        original = getattr(kernels, "get_kernel", None)
        if original is None:
            return "kernels has no get_kernel"

        def get_kernel(repo_id: Any = None, *args: Any, **kwargs: Any) -> Any:
            self.kernels.append(str(repo_id))
            return original(repo_id, *args, **kwargs)

        kernels.get_kernel = get_kernel
        return None


class Captured(logging.Handler):
    """The warnings transformers logs while deciding (its fallbacks say so in a warning)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines = []  # type: List[str]

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            self.lines.append(record.getMessage()[:TAIL])


def _chain(exc: BaseException) -> List[str]:
    """The exception and the ones it was raised from or during, outermost first."""
    out: List[str] = []
    seen: Set[int] = set()
    current = exc  # type: Optional[BaseException]
    while current is not None and id(current) not in seen and len(out) < 5:
        seen.add(id(current))
        out.append("%s: %s" % (type(current).__name__, str(current)[:TAIL]))
        current = current.__cause__ or current.__context__
    return out


def _availability(transformers: Any) -> Dict[str, Any]:
    """transformers' own availability functions, each that this release has, called as is."""
    utils = getattr(transformers, "utils", None)
    out = {}  # type: Dict[str, Any]
    for name in ("is_flash_attn_2_available", "is_flash_attn_3_available",
                 "is_flash_attn_4_available", "is_torch_sdpa_available", "is_kernels_available",
                 "is_torch_flex_attn_available"):
        fn = getattr(utils, name, None)
        if fn is None:
            continue
        try:
            value = fn()
            out[name] = bool(value[0] if isinstance(value, tuple) else value)
        except Exception as exc:
            out[name] = "%s: %s" % (type(exc).__name__, exc)
    return out


def _known(transformers: Any) -> Optional[List[str]]:
    """The implementations this release registers (AttentionInterface, 4.48+), with eager."""
    interface = getattr(transformers, "AttentionInterface", None)
    mapping = getattr(interface, "_global_mapping", None)
    return sorted(str(k) for k in mapping) + ["eager"] if isinstance(mapping, dict) else None


def _decide(auto: Any, config: Any, torch: Any, request: str, guard: Guard) -> Dict[str, Any]:
    handler = Captured()
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    guard.attempts, guard.kernels, guard.on = [], [], True
    entry = {"requested": request}  # type: Dict[str, Any]
    try:
        with torch.device("meta"):
            model = auto.from_config(config, attn_implementation=request)
        entry["resolved"] = str(getattr(model.config, "_attn_implementation", None))
    except BaseException as exc:  # transformers' refusal is the finding, whatever its type
        entry["error"] = _chain(exc)
    finally:
        guard.on = False
        logger.removeHandler(handler)
    entry["warnings"] = handler.lines[:10]
    entry["network"] = guard.attempts[:5]
    entry["hub_kernels"] = guard.kernels
    return entry


def run(context: Context) -> Dict[str, Any]:
    import importlib.util

    if importlib.util.find_spec("transformers") is None:
        return {"installed": False}
    guard = Guard()
    sys.addaudithook(guard.audit)
    with context.importing("torch"):
        import torch
    kernels_error = None  # type: Optional[str]
    if importlib.util.find_spec("kernels") is not None:
        with context.importing("kernels"):  # before transformers imports get_kernel from it
            kernels_error = guard.wrap_kernels()
    with context.importing("transformers"):
        import transformers
        from transformers import AutoModelForCausalLM, LlamaConfig
    known = _known(transformers)
    config = LlamaConfig(**CONFIG)
    asked = [r for r in REQUESTS if r not in KNOWN_ONLY or known is None or r in known]
    decisions = []
    for request in asked:
        with context.importing("transformers: attn_implementation=%s" % request):
            decisions.append(_decide(AutoModelForCausalLM, config, torch, request, guard))
    return {"installed": True, "version": str(getattr(transformers, "__version__", "")),
            "torch": str(torch.__version__), "cuda_available": bool(torch.cuda.is_available()),
            "known": known, "availability": _availability(transformers),
            "kernels_error": kernels_error, "decisions": decisions}
