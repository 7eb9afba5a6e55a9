"""A pydantic validation error of a file the user gave (facts, matrix) as every problem it holds,
one line each: where, the entry's identity when it has one, and what is wrong."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

from pydantic import ValidationError


class Problems(ValueError):
    """Several problems found at once by one validator, each naming its entry; `problems` reports
    every one (pydantic keeps this exception in the error's ctx)."""

    def __init__(self, problems: List[str]) -> None:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(problems[0] + more)
        self.problems = problems


_IDENTITY = ("id", "version", "minor", "name", "api", "cuda", "cuda_major", "family", "backend")


def problems(exc: ValidationError, raw: Any = None) -> List[str]:
    """One line per problem: where it is, then what is wrong. A validator that raised `Problems`
    gives a line to each; for a field error the entry's identity in `raw` (id=..., version=...)
    follows its path."""
    out: List[str] = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, Problems):
            out += [f"{where}: {p}" for p in cause.problems]
        else:
            label = _entry_label(raw, error["loc"])
            out.append(f"{where}{f' ({label})' if label else ''}: {error['msg']}")
    return [line.replace("\n", " ") for line in out]


def _entry_label(raw: Any, loc: Sequence[Union[int, str]]) -> Optional[str]:
    """The identity of the innermost list entry on `loc` in the raw data, if it has one."""
    label, node = None, raw
    for step in loc:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(step, int) and isinstance(node, dict):
            key = next((k for k in _IDENTITY if k in node), None)
            label = f"{key}={node[key]}" if key else label
    return label
