"""AMD GPUs by product name -> their LLVM gfx target, the name ROCm builds are compiled for
(PYTORCH_ROCM_ARCH, AMDGPU_TARGETS) and the runtime matches code objects against. From LLVM's
processor table (llvm/llvm-project llvm/docs/AMDGPUUsage.rst, "AMDGPU Processors": the example
products of each processor, with the RDNA3 and RDNA4 names added in llvm/llvm-project#170469 and
#155577) and AMD's GPU specifications page ("LLVM target name" column) (pure)."""

from __future__ import annotations

import re
from typing import Optional, Tuple

# (target, pattern of the product names), most specific first
_TARGETS: Tuple[Tuple[str, re.Pattern[str]], ...] = tuple(
    (gfx, re.compile(pattern, re.I)) for gfx, pattern in (
        ("gfx950", r"\bMI35[05]X\b"),
        ("gfx942", r"\bMI3(?:00[AX]|25X)\b"),
        ("gfx90a", r"\bMI2(?:10|50X?)\b"),
        ("gfx908", r"\bMI100\b"),
        ("gfx906", r"\bMI(?:50|60)\b|\bRadeon\s+VII\b"),
        ("gfx1201", r"\bRX\s?9070(?:\s?(?:XT|GRE))?\b"),
        ("gfx1200", r"\bRX\s?9060(?:\s?XT)?\b"),
        ("gfx1100", r"\bRX\s?7900\s?(?:XTX|XT|GRE)?\b|\bPro\s+W7[89]00\b"),
        ("gfx1101", r"\bRX\s?7[78]00(?:\s?XT)?\b"),
        ("gfx1102", r"\bRX\s?7600(?:\s?XT)?\b"),
        ("gfx1030", r"\bRX\s?6(?:950|900|800)(?:\s?XT)?\b|\bPro\s+W6800\b"),
        ("gfx1031", r"\bRX\s?67[05]0(?:\s?XT)?\b"),
        ("gfx1032", r"\bRX\s?66[05]0(?:\s?XT)?\b"),
        ("gfx1010", r"\bRX\s?5[67]00(?:\s?XT)?\b"),
        ("gfx1012", r"\bRX\s?5[35]00(?:\s?XT)?\b")))


def gfx_of(name: str) -> Optional[str]:
    """The gfx target of an AMD GPU named as people write it ("AMD Radeon 7900 XTX", "RX 6700 XT",
    "Instinct MI250X"); "RX" may be left out after "Radeon"."""
    text = re.sub(r"\bRadeon\s+(?!RX\b|Pro\b|VII\b)", "Radeon RX ", name, flags=re.I)
    return next((gfx for gfx, pattern in _TARGETS if pattern.search(text)), None)
