"""The worker: runs the requested stages in order, each through the dispatch table, and reports
each one's result (or the exception it raised) on the protocol's channel."""

import importlib
import sys
from typing import Any, Callable, Dict, List, Optional

from .attention import CONTEXT_LOST
from .attention import stage as attention_stage
from .context import Context
from .protocol import Channel, parse_args
from .registry import BY_NAME, names

# A stage's `runs` -> the module of this package whose run(context, **params) returns the stage's
# data; None: an attention stage of that kind. A module is imported when a stage of this worker
# needs it: the transformers lane reads no ELF files, the main lane opens no sockets.
DISPATCH: Dict[str, Optional[str]] = {
    "host": "host",
    "packages": "packages",
    "files": "files",
    "torch_facts": "torch_facts",
    "sdpa": "sdpa",
    "family": "family",
    "hf_attention": "hf_attention",
    "smoke": None,
    "compile": None,
    "bench": None,
    "collective": "collective",
}


def runner(runs: str) -> Callable[..., Dict[str, Any]]:
    """The function that runs a stage whose `runs` is this."""
    module = DISPATCH[runs]
    if module is None:
        return attention_stage(runs)
    found: Callable[..., Dict[str, Any]] = importlib.import_module("." + module, __package__).run
    return found


def main(argv: List[str], send: Callable[[Dict[str, Any]], None]) -> int:
    request = parse_args(argv)
    del sys.argv[1:]  # the libraries imported read sys.argv: they must not see fadoctor's flags
    channel = Channel(request.fd, send)
    context = Context(request.options, announce=channel.importing)
    # Without --stages (run by hand, or by a launcher on each rank), every stage runs.
    for name in request.stages or names():
        channel.start(name)
        try:
            stage = BY_NAME.get(name)
            if stage is None:
                raise ValueError("unknown stage %r" % name)
            data = runner(stage.runs)(context, **dict(stage.params))
        except BaseException as exc:
            channel.failed(name, exc)
            continue
        channel.result(name, data)
        if data.get(CONTEXT_LOST):
            return 3  # the CUDA context is unusable: the runner starts a fresh worker for the rest
    channel.done()
    return 0
