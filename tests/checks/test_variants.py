"""Only a binary certain to be loaded gets an error-severity prediction (checks.variants): a
per-release bundle is judged by its build for the installed torch, a plain shared library that
links torch by warnings. Replayed on facts recorded on the H200 machine, and end to end on
libraries built with gcc beside the real CPU torch."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from tests.checks.test_recorded import check, load
from tests.helpers.broken import environ_with_path, gcc, requires_gcc, requires_torch

from fadoctor.evaluate import evaluate
from fadoctor.matrix import Matrix
from fadoctor.report import Severity, Status

MISSING = "_ZN3c1019symbolNoTorchDefinesEv"  # c10::symbolNoTorchDefines()


def test_recorded_addon_bundle_is_judged_by_its_build_for_the_installed_torch(
        matrix: Matrix) -> None:
    """torch_c_dlpack_ext 0.1.5 ships addons for torch 2.4-2.9 (the 2.4 and 2.5 ones with the old
    C++ ABI); with torch 2.11 none is loaded, and flash-attn-4 ran on that machine."""
    report = evaluate(load("h200-torch211-fa4-kernels-default"), matrix)
    assert not any(f.severity == Severity.ERROR for c in report.checks for f in c.findings)
    symbols = check(report, "FAD131")
    assert symbols.status == Status.PASSED
    assert not any("libtorch_c_dlpack_addon" in f.message and f.severity != Severity.INFO
                   for f in symbols.findings)
    note = next(f for f in symbols.findings if "torch_c_dlpack_ext" in f.message)
    assert "12 of its 12 builds" in note.message and "not loaded with torch 2.11" in note.message
    libraries = check(report, "FAD130")
    # Plain libraries its own code may load, or build at run time: worth a note, no warning.
    assert libraries.status == Status.PASSED
    (no_build,) = [f for f in libraries.findings if "none for this torch" in f.message]
    assert no_build.severity == Severity.INFO
    assert "none for this torch 2.11" in no_build.message and "2.4, 2.5" in no_build.message
    # The extension modules of torchvision and torchaudio are still judged, one by one.
    assert any("torchvision/_C.so" in f.message for f in symbols.findings)


def _torch_lib() -> Path:
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "lib"


def _torch_release() -> str:
    version = (_torch_lib().parent / "version.py").read_text()
    found = re.search(r"__version__ = '(\d+)\.(\d+)", version)
    assert found is not None
    return f"{found.group(1)}{found.group(2)}"


def _library(path: Path, *, broken: bool, module: bool = False) -> Path:
    """A shared object that links the real libc10 and, if `broken`, needs a c10 symbol that no
    torch defines; a Python extension module when `module`."""
    body = f'extern void missing(void) __asm__("{MISSING}");\nvoid use(void) {{ missing(); }}\n' \
        if broken else "int addon_version(void) { return 1; }\n"
    if module:
        body += f"void *PyInit_{path.name.split('.')[0]}(void) {{ return 0; }}\n"
    return gcc(path, body, "-Wl,--no-as-needed", f"-L{_torch_lib()}", "-lc10")


def _check(*extensions: Path, env: Dict[str, str] | None = None) -> Dict[str, Any]:
    args = [a for e in extensions for a in ("--extension", str(e))]
    done = subprocess.run([sys.executable, "-m", "fadoctor", "check", "--static", "--format",
                           "json", *args], capture_output=True, text=True, env=env, check=False)
    assert done.returncode in (0, 1), done.stderr
    report: Dict[str, Any] = json.loads(done.stdout)
    return report


def _findings(report: Dict[str, Any], check_id: str) -> List[Dict[str, Any]]:
    found: List[Dict[str, Any]] = next(c for c in report["checks"] if c["id"] == check_id)[
        "findings"]
    return found


@requires_gcc
@requires_torch
@pytest.mark.parametrize("broken", ["other", "installed"])
def test_bundle_judges_only_the_build_for_the_installed_torch(tmp_path: Path, broken: str) -> None:
    here, other = _torch_release(), "24"
    mine = _library(tmp_path / f"libaddon_torch{here}-cpu.so", broken=broken == "installed")
    old = _library(tmp_path / f"libaddon_torch{other}-cpu.so", broken=broken == "other")
    symbols = _findings(_check(old, mine), "FAD131")
    errors = [f for f in symbols if f["severity"] == "error"]
    if broken == "installed":
        assert [f["evidence"]["path"] for f in errors] == [str(mine)]
        assert "symbolNoTorchDefines" in errors[0]["message"]
        return
    assert errors == [] and not any(f["severity"] == "warning" for f in symbols)
    note = next(f for f in symbols if "not loaded" in f["message"])
    assert note["evidence"]["not_loaded"] == [str(old)]


@requires_gcc
@requires_torch
def test_bundle_without_a_build_for_the_installed_torch_is_a_note(tmp_path: Path) -> None:
    """Plain libraries, one per torch release, none for this one: a note (the package's own code
    picks one, or builds one at run time), never an error."""
    builds = [_library(tmp_path / f"libaddon_torch{r}.so", broken=r == "24") for r in ("24", "25")]
    report = _check(*builds)
    assert not any(f["severity"] == "error" for c in report["checks"] for f in c["findings"]
                   if c["id"].startswith("FAD13"))  # FAD101, FAD103: no GPU, a CPU torch here
    (note,) = [f for f in _findings(report, "FAD130") if "none for this torch" in f["message"]]
    assert note["severity"] == "info"
    assert "built for torch 2.4, 2.5, none for this torch" in note["message"]


@requires_gcc
@requires_torch
def test_scan_caps_plain_libraries_and_judges_extension_modules(tmp_path: Path) -> None:
    """Found on sys.path by the scan: a broken plain library is at most a warning (only
    torch.ops.load_library or ctypes loads it); a broken extension module is an error."""
    package = tmp_path / "pkg"
    package.mkdir()
    plain = _library(package / "libplain_ops.so", broken=True)
    module = _library(package / "_broken_ext.so", broken=True, module=True)
    report = _check(env=environ_with_path(tmp_path))
    by_path = {f["evidence"].get("path"): f for f in _findings(report, "FAD131")
               if f["severity"] != "info"}
    assert by_path[str(plain)]["severity"] == "warning"
    assert "if it is loaded at all" in by_path[str(plain)]["message"]
    assert by_path[str(module)]["severity"] == "error"
