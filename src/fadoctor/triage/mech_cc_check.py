"""A kernel's own check of the GPU's compute capability, printed as its condition: a TORCH_CHECK
without a message prints "Expected <condition> to be true, but got false" (c10/util/Exception.h,
TORCH_CHECK_MSG's default), and CUDA extensions test `dprops->major == 8 && dprops->minor == 0`
(NVIDIA's FMHA in apex/contrib and its MLPerf BERT copy; many others). The condition lists the
capabilities the kernel was written for; the GPU the report names is not among them (pure)."""

from __future__ import annotations

import re
from typing import List, Set, Tuple

from packaging.version import Version

from fadoctor.report import Category, Remedy
from fadoctor.triage import remedies as r
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_EXPECTED = re.compile(r"Expected (\(?[^\n]{0,300}?\bmajor\b[^\n]{0,300}?) to be true, but got "
                       r"false")
_EXACT = re.compile(r"major\s*==\s*(\d+)\s*&&\s*[\w>.-]{0,30}minor\s*==\s*(\d+)")
_MAJOR = re.compile(r"major\s*(==|>=)\s*(\d+)(?!\s*&&\s*[\w>.-]{0,30}minor)")


def _admitted(condition: str) -> Tuple[Set[Tuple[int, int]], Set[int], int]:
    """The exact capabilities, the whole majors, and the lowest major (>=) the condition admits
    (999: no floor)."""
    exact = {(int(a), int(b)) for a, b in _EXACT.findall(condition)}
    majors = {int(n) for op, n in _MAJOR.findall(condition) if op == "=="}
    floor = min((int(n) for op, n in _MAJOR.findall(condition) if op == ">="), default=999)
    return exact, majors, floor


def capability_check(ctx: Context) -> List[Signal]:
    hit = ctx.first(_EXPECTED, ("to be true, but got false",))
    cc = ctx.gpu_cc_exact
    if hit is None or cc is None or ctx.gpu is None or ctx.amd:
        return []
    exact, majors, floor = _admitted(hit[1].group(1))
    if not exact and not majors and floor == 999:
        return []
    if (cc.major, cc.minor) in exact or cc.major in majors or cc.major >= floor:
        return []  # the named GPU passes the check: it is about another device
    sms = sorted({*(f"sm_{a}{b}" for a, b in exact), *(f"sm_{m}x" for m in majors),
                  *([f"sm_{floor}0 and newer"] if floor != 999 else [])})
    listed = ", ".join(sms)
    newer = any(Version(f"{a}.{b}") < cc for a, b in exact) or any(m < cc.major for m in majors)
    return [Signal("capability_check", Category.GPU_UNSUPPORTED,
                   f"the kernel's own check admits only {listed}; {ctx.gpu[0]} is "
                   f"sm_{cc.major}{cc.minor}, so it refuses to run there", dedupe(
                       [ctx.quote(hit[0]), ctx.gpu[2]]), LOGGED,
                   [Remedy(summary=f"This kernel is written and compiled for {listed} only: turn "
                           "off the option that selects it (the fused or unpadded attention path "
                           "of the program), or run on a GPU it lists"
                           + (", or a release of the package whose check includes this GPU"
                              if newer else "") + "."),
                    r.sdpa("Or attention through PyTorch SDPA, which runs on this GPU:")],
                   details={"source": "c10/util/Exception.h (TORCH_CHECK without a message)"})]
