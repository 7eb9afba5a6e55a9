"""torch's CPU library missing an Intel symbol the environment's MKL no longer exports:
"libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent" (also iJIT_IsProfilingActive,
iJIT_GetNewMethodID: Intel's JIT profiling API). MKL 2024.1 removed them (pytorch/pytorch#123097,
"encountered when MKL 2024.1 is installed"), and torch builds that link MKL dynamically — conda's
pytorch channel packages, or a torch whose libtorch_cpu.so loads the environment's libmkl — need
them; pip's torch wheels carry their own MKL. So the fix is the MKL before it (2024.0), or torch
from pip (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal

SOURCE = "pytorch/pytorch#123097 (undefined symbol iJIT_NotifyEvent with MKL 2024.1)"
_IJIT = re.compile(r"libtorch(?:_cpu)?\.so[^\n]{0,20}: undefined symbol: (iJIT_\w{1,40})")
_CONDA_ENV = re.compile(r"(/[^\s'\"]{1,200}/(?:envs/[\w.-]{1,80}|anaconda3|miniconda3|miniforge3|"
                        r"mambaforge))/lib/python")


def ijit(ctx: Context) -> List[Signal]:
    hit = ctx.first(_IJIT, ("undefined symbol: ijit_",))
    if hit is None:
        return []
    index, found = hit
    env = _CONDA_ENV.search(ctx.text.lines[index])
    pin = command("conda", "install", *(("-p", env.group(1)) if env else ()), "mkl=2024.0")
    return [Signal(
        "mkl_ijit", Category.VERSION_CONFLICT,
        f"torch's libtorch_cpu.so needs {found.group(1)}, Intel's JIT profiling API, which MKL "
        "2024.1 and later no longer export: this torch links the environment's MKL (a conda "
        "build), and the environment holds an MKL too new for it",
        [ctx.quote(index)], NAMED,
        [Remedy(summary="Pin the environment's MKL to 2024.0, the last release that exports it "
                "(in the environment file too: mkl=2024.0).", commands=[pin]),
         Remedy(summary="Or install torch from pip into this environment instead (its wheels "
                "carry their own MKL), after removing conda's pytorch package.")],
        details={"source": SOURCE})]
