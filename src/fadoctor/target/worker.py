"""The worker: runs the requested stages in order, each through the dispatch table, and reports
each one's result (or the exception it raised) on the protocol's channel."""

from typing import Any, Callable, Dict, List  # noqa: F401 (type comments)

from . import family, files, host, packages, sdpa, torch_facts
from .context import Context
from .protocol import Channel, parse_args
from .registry import BY_NAME, STAGES

# A stage's `runs` -> the function that runs it: run(context, **params) -> the stage's data.
DISPATCH = {
    "host": host.run,
    "packages": packages.run,
    "files": files.run,
    "torch_facts": torch_facts.run,
    "sdpa": sdpa.run,
    "family": family.run,
}  # type: Dict[str, Callable[..., Dict[str, Any]]]


def main(argv: List[str]) -> int:
    request = parse_args(argv)
    channel = Channel(request.fd)
    context = Context(request.options)
    # Without --stages (run by hand, or by a launcher on each rank), every stage runs.
    for name in request.stages or [stage.name for stage in STAGES]:
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
    channel.done()
    return 0
