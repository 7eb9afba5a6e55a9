"""torch's and the CUDA runtime's catalogued messages (tools/torch_sources.py): every recorded
message at every release is an entry whose range holds it, the reader finds in the installed
torch what the fixture recorded for its release, each printed form gets its category and a
remedy that names the fix, and the entries corroborate the hand-written findings (never
replacing them); two written reports through `fadoctor triage` as a real child process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest
from tests.triage.test_catalog import _example, _tool

from fadoctor.matrix import Matrix
from fadoctor.report import Category, Severity
from fadoctor.triage.catalog_data import Entry
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_catalog import entries

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "torch_excerpts.yaml"
OURS = [e for e in entries() if e.source in ("torch", "c10", "cudart", "sdpa")]


def test_every_recorded_message_at_every_release_is_catalogued() -> None:
    ts = _tool("torch_sources")
    recorded = ts.load(RECORDED)
    torch, cudart = recorded["torch"], recorded["cudart"]
    assert torch["releases"][0] == "1.13.0" and torch["releases"][-1] == "2.15.0"
    assert len(torch["releases"]) == 17  # 1.13.0 and 2.0.0 .. 2.15.0, each minor's .0
    assert recorded["c10"]["releases"][0] == "2.0.0" and len(recorded["c10"]["releases"]) == 16
    assert {r.split("==")[0] for r in cudart["releases"]} == {
        "nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime"}
    by_text = {(e.source, e.printed): e for e in OURS}
    missing = []
    for family, data in recorded.items():
        for file, line, printed, runs in data["rows"]:
            if printed == ts.CUDA_ERROR:  # c10's prefix: cited by each cudart entry, no entry
                continue
            entry = by_text.get((family, ts.printed_form(family, printed)))
            for release in ts.ex.tags_in_runs(data["releases"], runs):
                have = ts.release_order(release)
                if entry is None or not ts.release_order(entry.first) <= have \
                        <= ts.release_order(entry.last):
                    missing.append(f"{release}:{file}:{line}: {printed}")
    assert missing == []


def test_the_reader_finds_in_the_installed_torch_what_was_recorded_for_its_release() -> None:
    torch = pytest.importorskip("torch")
    ts = _tool("torch_sources")
    recorded = ts.load(RECORDED)["torch"]
    release = torch.__version__.split("+")[0]
    if release not in recorded["releases"]:
        pytest.skip(f"torch {release} is not one of the recorded releases")
    found = {(file, line, printed) for file in ts.TORCH_FILES for line, printed in
             ts.torch_messages((Path(torch.__file__).parent.parent / file).read_text("utf-8"))}
    index = recorded["releases"].index(release)
    expected = {(file, line, printed) for file, line, printed, runs in recorded["rows"]
                if release in ts.ex.tags_in_runs(recorded["releases"], runs)}
    assert found == expected and len(found) >= 10, index


def test_the_reader_reads_a_wheels_files_and_a_libcudart(tmp_path: Path) -> None:
    """A real zip with the files where the wheels hold them: placeholders become named captures,
    a message over several lines is read line by line, the runtime's strings whole."""
    import zipfile
    ts = _tool("torch_sources")
    wheel = tmp_path / "torch-9.9.0-cp311-none-any.whl"
    cuda = ('WARN = """\n{} with CUDA capability sm_{} is not compatible with the current '
            'PyTorch installation.\nThe current PyTorch install supports CUDA capabilities {}.\n'
            '"""\nraise AssertionError("Torch not compiled with CUDA enabled")\n')
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("torch/cuda/__init__.py", cuda)
        z.writestr("torch/utils/cpp_extension.py", 'M = "The detected CUDA version (%s) has a '
                   'minor version mismatch with the version that was used to compile PyTorch '
                   '(%s). Most likely this shouldn\'t be a problem."\n')
    runtime = tmp_path / "nvidia_cuda_runtime_cu12-12.99.1-py3-none-manylinux2014_x86_64.whl"
    with zipfile.ZipFile(runtime, "w") as z:
        z.writestr("nvidia/cuda_runtime/lib/libcudart.so.12", b"\x7fELF\x00invalid device "
                   b"function\x00out of memory\x00unrelated text\x00")
    read = ts.read([wheel, runtime])
    assert read["cudart"]["releases"] == ["nvidia-cuda-runtime-cu12==12.99.1"]
    printed = [row[2] for row in read["torch"]["rows"]]
    assert printed[:2] == [
        "{value} with CUDA capability sm_{sm} is not compatible with the current PyTorch "
        "installation.", "The current PyTorch install supports CUDA capabilities {value}."]
    assert "Torch not compiled with CUDA enabled" in printed
    assert any("({version})" in p and "({pytorch})" in p for p in printed)
    assert [row[2] for row in read["cudart"]["rows"]] == ["CUDA error: invalid device function",
                                                         "CUDA error: out of memory"]


def _hit(entry: Entry, found: Dict[str, object]) -> bool:
    cited = [str(c) for c in found.get("corroborated_by", [])]  # type: ignore[attr-defined]
    return found.get("catalog") == entry.id or any(c.startswith(entry.id) for c in cited)


# What a remedy must name, by category: the fix, not a restatement of the error.
FIX = {Category.NO_KERNEL_IMAGE: r"torch==|fadoctor fix|flash-attn>=|arch list|sdpa|TORCH_CUDA_ARCH_LIST",
       Category.GPU_UNSUPPORTED: r"torch==|sdpa|eager",
       Category.DRIVER_TOO_OLD: r"[Uu]pgrade the NVIDIA driver|reboot",
       # cudaErrorSystemDriverMismatch: the libcuda loaded is not the kernel module's
       Category.CUDA_RUNTIME_MISMATCH: r"reboot|cuda-compat",
       Category.NO_GPU: r"driver|--gpus all|LD_LIBRARY_PATH",
       Category.TORCH_CPU_ONLY: r"CUDA build of torch|torch==",
       Category.BUILD_TOOLCHAIN: r"CUDA_HOME|nvcc|gcc|error:|--no-build-isolation|install ninja",
       Category.BUILD_RESOURCES: r"ninja|MAX_JOBS",
       Category.OUT_OF_MEMORY: r"batch size|nvidia-smi",
       Category.KERNEL_FAILURE: r"CUDA_LAUNCH_BLOCKING=1"}


# PyTorch SDPA's own backend checks: let SDPA use another backend (or a torch whose range holds
# the GPU).
SDPA_FIX = r"sdpa_kernel|math backends|torch=="


@pytest.mark.parametrize("entry", OURS, ids=[e.id for e in OURS])
def test_each_printed_form_gets_its_category_and_a_fix(entry: Entry, matrix: Matrix) -> None:
    text = f"GPU 0: NVIDIA GeForce RTX 3090\nRuntimeError: {_example(entry.printed)}\n"
    diagnosis = triage(text, matrix).diagnosis
    top = diagnosis[0]
    assert top.category == entry.category
    assert any(_hit(entry, d.evidence) for d in diagnosis)
    said = " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)
    assert re.search(SDPA_FIX if entry.source == "sdpa" else FIX[entry.category], said), said
    if entry.weight == "note" and top.subject == "catalog":
        assert top.severity == Severity.WARNING  # harmless alone, or the error is above it


def test_the_capability_warning_corroborates_the_torch_arch_finding(matrix: Matrix) -> None:
    """The hand-written finding keeps its message and exact install command; the catalog adds
    torch's own citation to it instead of a second, weaker finding."""
    text = ("PyTorch version: 2.6.0+cu124\nGPU 0: NVIDIA GeForce RTX 5090\nNVIDIA GeForce RTX 5090 "
            "with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n")
    diagnosis = triage(text, matrix).diagnosis
    assert [d.subject for d in diagnosis].count("catalog") == 0
    top = diagnosis[0]
    assert top.subject == "torch_arch" and top.category == Category.NO_KERNEL_IMAGE
    assert any(c.startswith("torch-005 (torch==1.13.0:torch/cuda/__init__.py:")
               for c in top.evidence["corroborated_by"])
    commands = [c for r in top.remedies for c in r.commands]
    assert any("torch==2.7.1+cu128" in c and "whl/cu128" in c for c in commands)


def test_torch_2_11s_new_wording_gets_the_torch_that_has_the_gpus_sm(matrix: Matrix) -> None:
    """torch 2.11 prints `... compute capability (CC) 12.0.`, which no hand-written mechanism
    reads: the entry stands alone, its capture gives the sm."""
    text = ("PyTorch version: 2.11.0+cu126\nFound GPU0 NVIDIA GeForce RTX 5090 which is of "
            "compute capability (CC) 12.0.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.subject == "catalog" and top.category == Category.NO_KERNEL_IMAGE
    assert top.evidence["catalog"] == next(e.id for e in OURS if "(CC)" in e.printed)
    assert "sm_120" in " ".join(r.summary for r in top.remedies)


def test_one_warning_over_several_lines_is_one_finding(matrix: Matrix) -> None:
    """torch 2.13's warning: its lines are separate entries, no hand-written mechanism reads
    them, and they fold into the first (whose capture gives the sm)."""
    text = ("GPU 0: NVIDIA GeForce RTX 5090\nFound GPU0 NVIDIA GeForce RTX 5090 which is of "
            "compute capability (CC) 12.0.\nYour installed torch==2.13.0+cu126 does not include "
            "kernels for this GPU. Reinstall the same version against a CUDA build that does, "
            "e.g.:\n")
    diagnosis = triage(text, matrix).diagnosis
    assert [d.category for d in diagnosis] == [Category.NO_KERNEL_IMAGE]
    newer = next(e.id for e in OURS if "does not include kernels" in e.printed)
    assert any(c.startswith(newer) for c in diagnosis[0].evidence["corroborated_by"])
    assert "sm_120" in " ".join(r.summary for r in diagnosis[0].remedies)


def _fadoctor_json(report: str) -> Dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "fadoctor", "triage", "-", "--format", "json"],
                          input=report.encode(), capture_output=True, timeout=300, check=False)
    assert done.returncode == 1, done.stderr
    loaded: Dict[str, object] = json.loads(done.stdout)
    return loaded


# Written for this test (not copied from an issue thread): what a Blackwell card with a cu124
# torch prints on its first flash-attn call.
BLACKWELL_ON_CU124 = """\
PyTorch version: 2.6.0+cu124
CUDA used to build PyTorch: 12.4
Nvidia driver version: 570.124.06
GPU 0: NVIDIA GeForce RTX 5090
/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:235: UserWarning:
NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.
The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.
  warnings.warn(
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    out = flash_attn_func(q, k, v)
RuntimeError: CUDA error: no kernel image is available for execution on the device
"""
# Written for this test: a cu128 build on an A100 whose driver predates CUDA 12.8.
PTX_ON_OLD_DRIVER = """\
PyTorch version: 2.7.1+cu128
CUDA used to build PyTorch: 12.8
Nvidia driver version: 535.183.01
GPU 0: NVIDIA A100-SXM4-80GB
Traceback (most recent call last):
  File "bench.py", line 30, in <module>
    flash_attn_func(q, k, v, causal=True)
RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.
"""


def test_blackwell_on_a_cu124_torch_end_to_end() -> None:
    diagnosis = _fadoctor_json(BLACKWELL_ON_CU124)["diagnosis"]
    assert isinstance(diagnosis, list)
    top = diagnosis[0]
    assert top["category"] == "no_kernel_image" and top["subject"] == "torch_arch"
    assert any(c.startswith("torch-005") for c in top["evidence"]["corroborated_by"])
    commands = [c for r in top["remedies"] for c in r["commands"]]
    assert any(re.search(r"-m pip install torch==2\.7\.1\+cu128 --index-url \S+/whl/cu128$", c)
               for c in commands), commands
    cited = [c for d in diagnosis for c in d["evidence"].get("corroborated_by", [])]
    assert any(c.startswith("cudart-") and "libcudart.so" in c for c in cited)


def test_ptx_from_a_newer_toolkit_names_the_driver_end_to_end() -> None:
    top = _fadoctor_json(PTX_ON_OLD_DRIVER)["diagnosis"][0]  # type: ignore[index]
    assert top["category"] == "driver_too_old" and top["subject"] == "catalog"
    assert top["evidence"]["source"].startswith("nvidia-cuda-runtime-cu11==11.7.99:")
    summary = top["remedies"][0]["summary"]
    assert "upgrade the NVIDIA driver >= " in summary and "CUDA 12.8" in summary
