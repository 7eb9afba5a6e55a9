"""Stage `packages`: the relevant installed distributions, read from their metadata."""

from typing import Any, Dict

from .context import Context
from .distributions import listing


def run(context: Context) -> Dict[str, Any]:
    out = listing()
    context.remember(out)
    return {"distributions": out}
