"""Replace the generated block between a `# BEGIN GENERATED name` line and its `# END GENERATED
name` line of a hand-kept file (the compatibility matrix), for the generators under tools/."""

from __future__ import annotations

import re
from typing import List


def splice(text: str, begin: str, end: str, lines: List[str], where: str) -> str:
    """`text` with the lines between `begin` and `end` (both kept) replaced by `lines`; a file
    without the markers stops the generator rather than losing the block."""
    pattern = re.compile(rf"^{re.escape(begin)}\n.*?^{re.escape(end)}\n", re.S | re.M)
    if not pattern.search(text):
        raise SystemExit(f"{where}: no '{begin}' ... '{end}' markers")
    return pattern.sub(lambda _: "\n".join([begin, *lines, end]) + "\n", text)
