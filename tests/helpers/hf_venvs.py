"""Real virtualenvs with one transformers release each (from the registry, by pip), which see the
test interpreter's CPU torch through a .pth line instead of installing it again.

Kept under FADOCTOR_TEST_CACHE (.ci/run sets it; else a temporary folder) so that a second run
reuses them; a venv counts only once its install finished (its `ready` file)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Sequence

import pytest

import fadoctor

# The releases the tests hold fadoctor's reading against, each with what it shows:
RELEASES = {
    "4.46.3": ("transformers==4.46.3",),  # before AttentionInterface and any Hub-kernel fallback
    "4.57.6": ("transformers==4.57.6",),  # the last 4.x: flash_attention_3, kernels fallback
    "5.24.0": ("transformers==5.24.0", "accelerate"),  # flash_attention_4; Trainer (accelerate)
    # 5.0.0 with a `kernels` it accepts (>= 0.9.0): flash_attention_2 falls back to the Hub
    "5.0.0+kernels": ("transformers==5.0.0", "kernels>=0.9,<0.12"),
}


def _root() -> Path:
    base = os.environ.get("FADOCTOR_TEST_CACHE") or os.path.join(tempfile.gettempdir(),
                                                                 "fadoctor-tests")
    tag = "py{}{}".format(*sys.version_info[:2])
    return Path(base) / "hf-venvs" / tag


def _link(venv: Path) -> None:
    """The .pth lines: this interpreter's site-packages (torch, fadoctor's dependencies) and
    fadoctor's own source, after the venv's own packages. Rewritten on every use: the test
    venv may have moved."""
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    source = Path(fadoctor.__file__).resolve().parents[1]
    lines = [sysconfig.get_paths()["purelib"], str(source)]
    Path(purelib, "zz_fadoctor_tests.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")


def venv_with(release: str) -> Path:
    """The python of a venv holding RELEASES[release]; the test is skipped when pip cannot
    reach the registry (and fails on any other install error)."""
    requirements: Sequence[str] = RELEASES[release]
    venv = _root() / release
    python = venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    # One builder at a time (test runs may share the cache), and a venv whose install was cut
    # short after another run had marked it ready is built again, not trusted.
    with open(venv.parent / f".{release}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / "ready").is_file() or not _intact(python, requirements):
            _build(venv, python, requirements)
    _link(venv)
    return python


def _intact(python: Path, requirements: Sequence[str]) -> bool:
    """Each pinned requirement is installed in the venv at its version (read from metadata)."""
    pins = [r.split("==", 1) for r in requirements if "==" in r]
    code = ("import importlib.metadata as m, sys; pins = sys.argv[1:]; "
            "sys.exit(any(m.version(n) != v for n, v in zip(pins[::2], pins[1::2])))")
    if not python.exists():
        return False
    done = subprocess.run([str(python), "-c", code, *(x for pin in pins for x in pin)],
                          capture_output=True, text=True, timeout=120)
    return done.returncode == 0


def _build(venv: Path, python: Path, requirements: Sequence[str]) -> None:
    """A fresh venv with `requirements` installed, marked ready only once pip succeeded."""
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    _link(venv)
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", *requirements],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        text = done.stdout + done.stderr
        if "No matching distribution" in text or "connection" in text.lower():
            pytest.skip(f"cannot install {requirements} here: {text[-300:]}")
        raise AssertionError(f"pip install {requirements} failed:\n{text[-2000:]}")
    (venv / "ready").write_text(" ".join(requirements), encoding="utf-8")
