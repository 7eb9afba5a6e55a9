"""The real nvcc refusing a flag: a one-line kernel compiled with the flags given, and what nvcc
printed (its own wording, for triage to read)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

NVCC = shutil.which("nvcc")


def refused(folder: Path, *flags: str) -> str:
    """nvcc's output for a kernel built with `flags`, which it must refuse."""
    assert NVCC is not None
    (folder / "k.cu").write_text("__global__ void k() {}\n")
    done = subprocess.run([NVCC, "-c", "k.cu", *flags], cwd=folder, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode != 0, done.stdout
    return done.stdout + done.stderr
