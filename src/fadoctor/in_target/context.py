"""What the stages of one worker share: the run-wide options and the installed distributions."""

from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional


class Context:
    def __init__(self, options: Optional[Dict[str, str]] = None,
                 announce: Optional[Callable[[Optional[str]], None]] = None) -> None:
        self.options = dict(options or {})
        self._distributions = None  # type: Optional[Dict[str, str]]
        self._announce = announce or (lambda module: None)

    @contextmanager
    def importing(self, module: str) -> Iterator[None]:
        """Tell the parent that `module` is being imported, and when that is over: a crash or a
        hang in between is that import's."""
        self._announce(module)
        try:
            yield
        finally:
            self._announce(None)

    def distributions(self) -> Dict[str, str]:
        """Canonical name -> version of the relevant distributions (listed once per worker)."""
        if self._distributions is None:
            from .distributions import listing

            self.remember(listing())
        assert self._distributions is not None
        return self._distributions

    def remember(self, distributions: List[Dict[str, Any]]) -> None:
        """Keep the packages stage's listing for the stages after it."""
        self._distributions = {d["name"]: d["version"] for d in distributions}
