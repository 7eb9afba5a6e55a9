"""The worker: runs the requested stages in order, each through the dispatch table, and reports
each one's result (or the exception it raised) on the protocol's channel."""

import sys
from typing import Any, Callable, Dict, List

from . import collective, family, files, hf_attention, host, packages, sdpa, torch_facts
from .attention import CONTEXT_LOST
from .attention import stage as attention_stage
from .context import Context
from .protocol import Channel, parse_args
from .registry import BY_NAME, names

# A stage's `runs` -> the function that runs it: run(context, **params) -> the stage's data.
DISPATCH = {
    "host": host.run,
    "packages": packages.run,
    "files": files.run,
    "torch_facts": torch_facts.run,
    "sdpa": sdpa.run,
    "family": family.run,
    "hf_attention": hf_attention.run,
    "smoke": attention_stage("smoke"),
    "compile": attention_stage("compile"),
    "bench": attention_stage("bench"),
    "collective": collective.run,
}  # type: Dict[str, Callable[..., Dict[str, Any]]]


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
            data = DISPATCH[stage.runs](context, **dict(stage.params))
        except BaseException as exc:
            channel.failed(name, exc)
            continue
        channel.result(name, data)
        if data.get(CONTEXT_LOST):
            return 3  # the CUDA context is unusable: the runner starts a fresh worker for the rest
    channel.done()
    return 0
