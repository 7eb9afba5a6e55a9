"""The NVIDIA driver and GPUs: NVML first, then /proc/driver/nvidia/version and nvidia-smi.

"No NVIDIA driver" is a fact (`Driver(present=False)`), not a failure. The driver belongs to the
machine, not to the Python environment, so this probe runs in fadoctor's own process.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, List, Optional

from fadoctor.facts.model import Driver, Failure, FailureKind, Gpu, Probe

PROC_VERSION = Path("/proc/driver/nvidia/version")
NVML_LIBRARY = "libnvidia-ml.so.1"
SMI_TIMEOUT = 15.0
_SMI_FIELDS = "index,name,compute_cap,memory.total,uuid,driver_version"


def probe_driver(proc_version: Path = PROC_VERSION) -> Probe[Driver]:
    try:
        nvml = _from_nvml()
    except Exception as exc:  # pynvml raises its own exception zoo; all mean "no NVML here"
        nvml_error = f"NVML: {type(exc).__name__}: {exc}"
    else:
        return Probe.success(nvml)
    smi = _from_nvidia_smi()
    if smi is not None:
        return smi
    version = _from_procfs(proc_version)
    if version is not None:
        return Probe.success(Driver(present=True, source="procfs", version=version,
                                    detail=nvml_error))
    return Probe.success(Driver(present=False, source="none", detail=nvml_error))


def _decode(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _from_nvml() -> Driver:
    # Load the library ourselves first: when it is absent, pynvml's own search falls back to
    # ctypes.util.find_library, which runs ldconfig and gcc and costs a third of a second.
    ctypes.CDLL(NVML_LIBRARY)
    import pynvml

    pynvml.nvmlInit()
    try:
        version = _decode(pynvml.nvmlSystemGetDriverVersion())
        cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
        gpus: List[Gpu] = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            gpus.append(Gpu(
                index=i,
                name=_decode(pynvml.nvmlDeviceGetName(handle)),
                compute_capability=f"{major}.{minor}",
                memory_mib=int(memory.total) // (1024 * 1024),
                uuid=_decode(pynvml.nvmlDeviceGetUUID(handle)),
            ))
    finally:
        pynvml.nvmlShutdown()
    return Driver(present=True, source="nvml", version=version,
                  cuda_version=f"{cuda // 1000}.{(cuda % 1000) // 10}", gpus=gpus)


def _from_procfs(path: Path) -> Optional[str]:
    try:
        text = path.read_text()
    except OSError:
        return None
    return procfs_version(text)


def procfs_version(text: str) -> Optional[str]:
    """The driver version in the text of /proc/driver/nvidia/version."""
    match = re.search(r"Kernel Module(?: for [\w-]+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None


def _from_nvidia_smi() -> Optional[Probe[Driver]]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, f"--query-gpu={_SMI_FIELDS}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=SMI_TIMEOUT, check=False,
        )
    except subprocess.TimeoutExpired:
        return Probe.failed(Failure(kind=FailureKind.TIMEOUT,
                                    reason=f"nvidia-smi did not answer within {SMI_TIMEOUT:g} s"))
    except OSError as exc:
        return Probe.failed(Failure(kind=FailureKind.ERROR, reason=f"nvidia-smi: {exc}"))
    if proc.returncode != 0:
        return Probe.success(Driver(present=False, source="nvidia-smi",
                                    detail=(proc.stdout + proc.stderr).strip()[-500:]))
    gpus, version = parse_smi_csv(proc.stdout)
    return Probe.success(Driver(present=True, source="nvidia-smi", version=version, gpus=gpus))


def parse_smi_csv(text: str) -> tuple[List[Gpu], Optional[str]]:
    """Parse `nvidia-smi --query-gpu=index,name,compute_cap,memory.total,uuid,driver_version`."""
    gpus: List[Gpu] = []
    version: Optional[str] = None
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 6 or not cells[0].isdigit():
            continue
        index, name, cc, memory, uuid, version = cells
        gpus.append(Gpu(
            index=int(index), name=name,
            compute_capability=cc if re.fullmatch(r"\d+\.\d+", cc) else None,
            memory_mib=int(memory) if memory.isdigit() else None,
            uuid=uuid or None,
        ))
    return gpus, version
