"""GPU models named in a line of text -> compute capability, from the matrix's GPU table (pure)."""

from __future__ import annotations

import functools
import re
from typing import List, Optional, Tuple

from fadoctor.matrix import Matrix

# GeForce series whose every model shares one compute capability on NVIDIA's CUDA GPUs pages
# (torch_cuda_facts.md §3: "GTX 9xx (5.2)", "GTX 10xx ... (6.1)", "GeForce RTX 30xx" in the 8.6
# row, every RTX 40xx model 8.9, every RTX 50xx model 12.0). Used only when the table has no row.
_SERIES = (
    (re.compile(r"\bGTX\s*9[5-8]0", re.I), "5.2"), (re.compile(r"\bGTX\s*10[5-8]0", re.I), "6.1"),
    (re.compile(r"\bRTX\s*30[5-9]0", re.I), "8.6"), (re.compile(r"\bRTX\s*40[5-9]0", re.I), "8.9"),
    (re.compile(r"\bRTX\s*50[5-9]0", re.I), "12.0"))
_CONSUMER = re.compile(r"(?<!GeForce )\b((?:RTX|GTX)\s*\d{4})", re.I)
_MODEL = re.compile(r"\b(?:GeForce\s+)?(?:RTX|GTX)\s*\d{4}(?:\s*Ti)?(?:\s+(?:Laptop|SUPER))?", re.I)


class GpuFinder:
    """`hint` finds lines that may name a GPU (one scan of the text); `names` resolves one."""

    def __init__(self, matrix: Matrix) -> None:
        self.matrix = matrix
        words = {g.name.split()[0].lower() for g in matrix.gpus}
        # Lines worth resolving: a model's first word (short ones only after a space).
        self.needles = tuple(sorted({w if len(w) > 2 else f" {w}" for w in words}
                                    | {"nvidia", "rtx", "gtx", "tesla"}))
        self.names = functools.lru_cache(maxsize=4096)(self._names)

    def _names(self, line: str) -> List[Tuple[str, Optional[str]]]:
        line = line[:400]
        spec = self.matrix.gpu(line) or self.matrix.gpu(_CONSUMER.sub(r"GeForce \1", line))
        if spec is not None:
            return [(spec.name, str(spec.cc))]
        model = _MODEL.search(line)
        if model is None:
            return []
        for pattern, cc in _SERIES:
            if pattern.search(model.group(0)):
                return [(model.group(0).strip(), cc)]
        return [(model.group(0).strip(), None)]
