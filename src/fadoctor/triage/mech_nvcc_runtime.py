"""A program that compiles CUDA code when it runs (FlashInfer's and other JIT kernels, torch's
cpp_extension.load, a model's custom kernel) not finding nvcc: "RuntimeError: Could not find
nvcc", "FileNotFoundError: [Errno 2] No such file or directory: 'nvcc'". Such code looks for the
compiler under CUDA_HOME (torch.utils.cpp_extension's _find_cuda_home: CUDA_HOME or CUDA_PATH,
then `which nvcc`, then /usr/local/cuda), not always on the shell's PATH. Two cases:

- the report shows nvcc working in the shell (`nvcc --version`'s "Cuda compilation tools"): the
  process does not see it where it looks, so CUDA_HOME names the toolkit's folder;
- no nvcc is shown: the machine or image has no CUDA toolkit (a `-runtime` container, a pip-only
  environment), so a toolkit (a `-devel` image) or the package's precompiled kernels are needed (pure).
"""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.triage.context import Context
from fadoctor.triage.signal import LOGGED, Signal, dedupe

_MISSING = re.compile(r"Could not find nvcc|No such file or directory: ['\"]nvcc['\"]|"
                      r"nvcc(?:\.exe)?['\"]? (?:was )?not found(?! in PATH, and)", re.I)
_WORKS = re.compile(r"Cuda compilation tools, release (\d+\.\d+)")
_WHERE = re.compile(r"(/usr/local/cuda(?:-\d+\.\d+)?|/opt/cuda)\b")


def nvcc_at_runtime(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MISSING, ("nvcc",))
    if hit is None or ctx.first(_BUILDING, ("building wheel", "setup.py", "pip install")):
        return []  # a package build: mech_build's compiler findings
    works = ctx.first(_WORKS, ("cuda compilation tools",))
    quotes = dedupe([ctx.quote(hit[0]), *([ctx.quote(works[0])] if works else [])])
    if works is not None:
        where = ctx.first(_WHERE, ("/usr/local/cuda", "/opt/cuda"))
        home = where[1].group(1) if where else "/usr/local/cuda"
        return [Signal("nvcc_runtime", Category.BUILD_TOOLCHAIN,
                       f"nvcc {works[1].group(1)} runs in the shell, yet the process compiling "
                       "kernels at run time does not find it: it looks under CUDA_HOME (then "
                       "PATH), which this process does not have", quotes, LOGGED,
                       [Remedy(summary="Point CUDA_HOME at the toolkit whose bin/nvcc the shell "
                               "runs (`dirname $(dirname $(which nvcc))`), in the environment the "
                               "server or its workers start with, and keep its bin on PATH; if it "
                               "began with a new release of the package, that release's lookup "
                               "may be at fault: the release before it, or the next one, "
                               "confirms.", commands=[f"export CUDA_HOME={home}"])])]
    return [Signal("nvcc_runtime", Category.BUILD_TOOLCHAIN,
                   "the program compiles CUDA kernels when it runs and there is no nvcc: this "
                   "machine or image has no CUDA toolkit (a -runtime container, or CUDA from pip "
                   "wheels only)", quotes, LOGGED,
                   [Remedy(summary="Give it a CUDA toolkit (nvcc) matching torch's CUDA: a "
                           "-devel image instead of -runtime, or the toolkit installed with "
                           "CUDA_HOME set to it; or install the package's precompiled kernels "
                           "(its AOT / jit-cache wheel, where it publishes one) so nothing is "
                           "compiled at run time.")])]


# a package being built (pip's wheel build, setup.py): the compiler missing there is a build's
_BUILDING = re.compile(r"Building wheels? for|setup\.py|Running setup\.py|"
                       r"Getting requirements to build wheel|pip install -e\b", re.I)
