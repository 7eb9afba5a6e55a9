"""The driver probe: NVML, then nvidia-smi, then procfs; "no driver" is a fact, not a failure.

This machine has no NVIDIA driver, so what a driver machine says is replayed: the nvidia-smi
output and /proc/driver/nvidia/version below were recorded on an H200 host (driver 580.159.04).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.helpers.broken import library_loads

from fadoctor.facts.model import FailureKind
from fadoctor.probes import driver
from fadoctor.probes.driver import parse_smi_csv, probe_driver

# `nvidia-smi --query-gpu=index,name,compute_cap,memory.total,uuid,driver_version
#  --format=csv,noheader,nounits`, recorded.
SMI_H200 = "0, NVIDIA H200, 9.0, 143771, GPU-d1cc60ae-a6fd-9b59-c1eb-81db10794e3d, 580.159.04\n"
# /proc/driver/nvidia/version of the open kernel module, recorded on the same host.
PROC_OPEN = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
             "(nixbld@)  \nGCC version:  gcc version 15.3.0 (GCC) \n")
# The proprietary module's first line has no "for <arch>".
PROC_PROPRIETARY = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.82.07  Wed Aug 27 "
                    "16:43:03 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n")
SMI_NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                 "Make sure that the latest NVIDIA driver is installed and running.\n")

SLEEP = shutil.which("sleep") or "/bin/sleep"
HAS_NVML = library_loads(driver.NVML_LIBRARY)
no_nvml = pytest.mark.skipif(HAS_NVML, reason="NVML is present: the fallbacks are not reached")


@pytest.fixture
def smi_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only what the test puts in this folder (no real nvidia-smi)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    return folder


def fake_smi(folder: Path, script: str) -> Path:
    """An `nvidia-smi` in `folder`; its PATH is only that folder, so it uses shell builtins."""
    exe = folder / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    return exe


@no_nvml
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None or driver.PROC_VERSION.exists(),
                    reason="this machine has an NVIDIA driver")
def test_no_driver_is_a_fact_not_a_failure() -> None:
    probe = probe_driver()
    assert probe.ok and probe.data is not None
    assert (probe.data.present, probe.data.source, probe.data.gpus) == (False, "none", None)
    assert (probe.data.detail or "").startswith("NVML: ")


def test_parse_smi_csv_reads_the_recorded_h200_line() -> None:
    gpus, version = parse_smi_csv(SMI_H200)
    assert version == "580.159.04"
    [gpu] = gpus
    assert (gpu.index, gpu.name, gpu.compute_capability, gpu.memory_mib) == (0, "NVIDIA H200", "9.0",
                                                                             143771)
    assert gpu.uuid == "GPU-d1cc60ae-a6fd-9b59-c1eb-81db10794e3d"


def test_parse_smi_csv_keeps_what_it_can_read() -> None:
    text = (SMI_H200 + "1, NVIDIA H200, [N/A], [N/A], GPU-x, 580.159.04\n"
            "No devices were found\n\n")
    gpus, version = parse_smi_csv(text)
    assert [g.index for g in gpus] == [0, 1]
    assert (gpus[1].compute_capability, gpus[1].memory_mib) == (None, None)
    assert version == "580.159.04"
    assert parse_smi_csv("No devices were found\n") == ([], None)


@no_nvml
def test_nvidia_smi_is_asked_for_the_fields_it_parses(smi_path: Path) -> None:
    args = smi_path / "args"
    fake_smi(smi_path, f'echo "$@" > {args}\nprintf %s "{SMI_H200}"\n')
    probe = probe_driver(proc_version=smi_path / "absent")
    assert args.read_text().split() == [f"--query-gpu={driver._SMI_FIELDS}",
                                        "--format=csv,noheader,nounits"]
    assert probe.ok and probe.data is not None
    assert (probe.data.present, probe.data.source, probe.data.version) == (True, "nvidia-smi",
                                                                           "580.159.04")
    assert [g.name for g in probe.data.gpus] == ["NVIDIA H200"]


@no_nvml
def test_nvidia_smi_without_a_driver_means_no_driver(smi_path: Path) -> None:
    fake_smi(smi_path, f'printf %s "{SMI_NO_DRIVER}"\nexit 9\n')
    probe = probe_driver(proc_version=smi_path / "absent")
    assert probe.ok and probe.data is not None
    assert (probe.data.present, probe.data.source) == (False, "nvidia-smi")
    assert "couldn't communicate with the NVIDIA driver" in (probe.data.detail or "")


@no_nvml
def test_a_hung_nvidia_smi_is_a_timeout(smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "SMI_TIMEOUT", 0.5)
    fake_smi(smi_path, f"exec {SLEEP} 600\n")
    probe = probe_driver(proc_version=smi_path / "absent")
    assert not probe.ok and probe.failure is not None
    assert probe.failure.kind == FailureKind.TIMEOUT
    assert "nvidia-smi did not answer within 0.5 s" in probe.failure.reason


@no_nvml
@pytest.mark.parametrize(("text", "version"), [(PROC_OPEN, "580.159.04"),
                                               (PROC_PROPRIETARY, "580.82.07")])
def test_procfs_gives_the_version_when_nothing_else_answers(
    smi_path: Path, text: str, version: str
) -> None:
    proc = smi_path.parent / "version"
    proc.write_text(text)
    probe = probe_driver(proc_version=proc)
    assert probe.ok and probe.data is not None
    assert (probe.data.present, probe.data.source, probe.data.version) == (True, "procfs", version)
    assert probe.data.gpus is None  # procfs names no GPUs: unknown, not none


@no_nvml
def test_an_unreadable_procfs_file_means_no_driver(smi_path: Path) -> None:
    proc = smi_path.parent / "version"
    proc.write_text("NVRM: something else entirely\n")
    probe = probe_driver(proc_version=proc)
    assert probe.data is not None and probe.data.present is False
