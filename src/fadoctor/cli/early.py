"""`fadoctor check` starts the target interpreter before the command line is built.

typer 0.29 imports pydantic and builds a TypeAdapter per option before a command runs (~0.2 s);
the worker in the target interpreter needs none of it. So `cli.main` hands the arguments here
first: when they are a plain `check` (every argument one that this module reads exactly as the
command line will), the collection starts at once, and `check` adopts it if its own options turn
out the same — else it starts its own, as it always did. Anything this module does not know
(`--help`, `--facts`, `--timeout`, another command, an unknown or repeated option, a value that
starts with `-`) starts nothing here. SIGTERM and SIGHUP are turned into an interrupt before the
first worker starts, as `cli.guard` does for every command, so that no worker outlives fadoctor.
Standard library and fadoctor's pydantic-free modules only.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from fadoctor.formats import FailOn, Format, KernelSet

if TYPE_CHECKING:
    from fadoctor.collect.run import Collection
    from fadoctor.collect.target import CollectOptions
    from fadoctor.probes.kernels import KernelOptions

# The options of `check` read here: name -> (its key, whether it takes a value, its choices).
_FORMATS = frozenset(f.value for f in Format)
_OPTIONS: Dict[str, Tuple[str, bool, Optional[FrozenSet[str]]]] = {
    "--python": ("python", True, None),
    "--static": ("static", False, None),
    "--format": ("format", True, _FORMATS),
    "-f": ("format", True, _FORMATS),
    "--verbose": ("verbose", False, None),
    "-v": ("verbose", False, None),
    "--fail-on": ("fail_on", True, frozenset(f.value for f in FailOn)),
    "--matrix": ("matrix", True, None),
    "--output": ("output", True, None),
    "-o": ("output", True, None),
    "--redact": ("redact", False, None),
}


class Relay:
    """The progress of a collection started before anything could show it: the latest stage is
    kept until a display is attached, then each stage goes straight to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: Optional[str] = None
        self._to: Optional[Callable[[str], None]] = None

    def __call__(self, stage: str) -> None:
        with self._lock:  # held while showing, so that a display never goes back a stage
            self._last = stage
            if self._to is not None:
                self._to(stage)

    def attach(self, to: Callable[[str], None]) -> None:
        with self._lock:
            self._to = to
            if self._last is not None:
                to(self._last)


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP stop fadoctor as Ctrl-C does (KeyboardInterrupt, exit 130), so that its
    workers die with it (nohup's SIG_IGN is kept). Set before the first worker starts."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, _interrupt)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def kernel_options(kernels: Optional[KernelSet], compile_: bool) -> KernelOptions:
    """The kernel tests of --kernels and --compile (the default set when --kernels is not given)."""
    from fadoctor.probes.kernels import KernelOptions

    return KernelOptions(smoke=(kernels or KernelSet.default).value, compile=compile_)


def collect_options(python: Optional[str], timeout: Optional[float], static: bool,
                    extensions: List[Path], kernels: Optional[KernelOptions] = None,
                    environ: Optional[Mapping[str, str]] = None) -> CollectOptions:
    """What a command collects with (`cli.common._collect`, and a plain `check` started here)."""
    from fadoctor.collect.target import CollectOptions
    from fadoctor.in_target.registry import BY_NAME
    from fadoctor.probes.kernels import KernelOptions

    timeouts = {stage: timeout for stage in BY_NAME} if timeout else {}
    return CollectOptions(python=python, timeouts=timeouts, static=static,
                          extensions=tuple(str(e.resolve()) for e in extensions),
                          kernels=kernels or KernelOptions(), environ=environ)


_STARTED: List[Tuple[CollectOptions, Relay, Collection]] = []


def plain_check(argv: Sequence[str]) -> Optional[Dict[str, object]]:
    """The options of `fadoctor check ARGS` by key, when every argument is one read here; None
    when the command line itself must decide what the arguments mean."""
    if not argv or argv[0] != "check":
        return None
    found: Dict[str, object] = {}
    rest = list(argv[1:])
    while rest:
        name, eq, value = rest.pop(0).partition("=")
        if name not in _OPTIONS or (eq and not name.startswith("--")):
            return None
        key, valued, choices = _OPTIONS[name]
        if key in found or (eq and not valued):
            return None
        if valued and not eq:
            if not rest:
                return None
            value = rest.pop(0)
        if valued and (value.startswith("-") or (choices is not None and value not in choices)):
            return None
        found[key] = value if valued else True
    return found


def start(argv: Sequence[str]) -> None:
    """Start the collection of a plain `check` now (nothing for any other command line)."""
    found = plain_check(argv)
    if found is None:
        return
    from fadoctor.cli.output import adopt_standard_streams
    from fadoctor.collect.run import Collection

    adopt_standard_streams()  # before the first pipe, as the command itself does
    stop_on_signals()
    python = found.get("python")
    options = collect_options(str(python) if python is not None else None, None,
                              bool(found.get("static")), [], kernels=kernel_options(None, False),
                              environ=dict(os.environ))
    relay = Relay()
    try:
        # The driver probe waits for `adopt`: it imports the facts models, which must not load
        # on a second thread while typer imports pydantic on this one.
        collection = Collection(options, progress=relay, driver=False)
    except Exception:  # e.g. a --python that is not an interpreter: `check` itself says so
        return
    _STARTED.append((options, relay, collection))


def adopt(options: CollectOptions, progress: Optional[Callable[[str], None]] = None
          ) -> Optional[Collection]:
    """The collection started early, if `check` would have started it with exactly `options`
    (the environment included); it then reports its progress to `progress`."""
    from dataclasses import replace

    if not _STARTED:
        return None
    early, relay, collection = _STARTED.pop()
    if replace(early, environ=None) != options or early.environ != dict(os.environ):
        return None  # left to finish on its own; its workers die with fadoctor at the latest
    if progress is not None:
        relay.attach(progress)
    collection.start_driver()
    return collection
