"""A Python process killed by SIGILL on an ARM64 board (Jetson): "Illegal instruction (core dumped)"
on `import torch` or any script that imports numpy. numpy 1.19.5's aarch64 wheels bundle an
OpenBLAS whose CPU detection picks a kernel the Jetsons' cores (Cortex-A57, Carmel) cannot run
(numpy/numpy#18131, "Illegal instruction (core dumped) on import for numpy 1.19.5 on ARM64"; its
confirmed workarounds: OPENBLAS_CORETYPE=ARMV8, which skips the detection, or numpy 1.19.4). The
process dies before any traceback, so the message is all a report shows (pure)."""

from __future__ import annotations

import re
from typing import List

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal

SOURCE = "numpy/numpy#18131 (numpy 1.19.5's OpenBLAS on ARM64: OPENBLAS_CORETYPE=ARMV8, 1.19.4)"
_SIGILL = re.compile(r"\billegal instruction(?:[^\n]{0,30}core dumped|\s*$)", re.I)
# the board, as reports name it ("the nano": the Jetson Nano)
_ARM = ("jetson", "l4t", "jetpack", "aarch64", "arm64", "xavier", "orin", "tx2", "nano")


def _numpy(ctx: Context) -> object:
    stated = ctx.package("numpy")
    try:
        return Version(stated.value) if stated is not None else None
    except InvalidVersion:
        return None


def sigill(ctx: Context) -> List[Signal]:
    hit = ctx.first(_SIGILL, ("illegal instruction",))
    if hit is None or not ctx.text.containing(_ARM):
        return []
    numpy = _numpy(ctx)
    if numpy is not None and numpy != Version("1.19.5"):
        return []  # another numpy: the known defect is not this one
    python = ctx.python
    old_python = python is None or python < Version("3.10")  # numpy 1.19.4 has wheels to 3.9
    remedies = [Remedy(summary="Skip OpenBLAS's CPU detection, which picks a kernel these cores "
                       "cannot run: set OPENBLAS_CORETYPE=ARMV8 in the environment that starts "
                       "Python (the shell profile, or the container's ENV).",
                       commands=["export OPENBLAS_CORETYPE=ARMV8"])]
    if old_python:
        remedies.append(Remedy(summary="Or install numpy 1.19.4, whose OpenBLAS does not do this.",
                               commands=[command("pip", "install", "numpy==1.19.4")]))
    return [Signal(
        "arm_openblas", Category.VERSION_CONFLICT,
        "Python was killed by an illegal instruction on an ARM64 board: numpy 1.19.5's bundled "
        "OpenBLAS picks a CPU kernel the Jetson's cores cannot run (numpy is imported by torch "
        "and most scripts)",
        [ctx.quote(hit[0])], LOGGED, remedies, details={"source": SOURCE})]
