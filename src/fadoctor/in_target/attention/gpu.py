"""The GPU's state before kernels run: free memory, other processes, utilisation.

Read through NVML (the nvidia-ml-py distribution, import name pynvml) when the target
interpreter has it, which also names the other processes on the GPU; else through
torch.cuda.mem_get_info, which knows only free and total memory. A busy GPU is reported as such
and the cases shrink or are skipped: never called a broken kernel.
"""

import contextlib
import os
import warnings
from typing import Any, Dict, List, Optional

MIB = 1024 * 1024
BUSY_UTILIZATION = 50  # percent: another job is computing on the GPU


def _ppid(pid: int) -> Optional[int]:
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _ours(pid: int) -> bool:
    """This worker, or a sibling worker of the same fadoctor run."""
    return pid == os.getpid() or _ppid(pid) == os.getppid()


def _nvml_handle(pynvml: Any, torch: Any, index: int) -> Any:
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is not None:
        text = str(uuid)
        return pynvml.nvmlDeviceGetHandleByUUID(text if text.startswith("GPU-") else "GPU-" + text)
    if os.environ.get("CUDA_VISIBLE_DEVICES") is None:
        return pynvml.nvmlDeviceGetHandleByIndex(index)
    raise LookupError("cannot map torch's device %d to an NVML device" % index)


def _from_nvml(torch: Any, index: int) -> Optional[Dict[str, Any]]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pynvml
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        handle = _nvml_handle(pynvml, torch, index)
        memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
        listed: List[Dict[str, Any]] = []
        for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            used = getattr(proc, "usedGpuMemory", None)
            listed.append({"pid": int(proc.pid), "ours": _ours(int(proc.pid)),
                           "used_mib": int(used) // MIB if isinstance(used, int) else None})
        # Without this process among them, NVML's PIDs are another namespace's (a container):
        # which ones are ours is unknown.
        processes = listed if any(p["pid"] == os.getpid() for p in listed) else None
        try:
            utilization: Optional[int] = int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        except Exception:
            utilization = None
        return {"source": "nvml", "free_mib": int(memory.free) // MIB,
                "total_mib": int(memory.total) // MIB, "processes": processes,
                "utilization": utilization}
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def state(torch: Any, device: str) -> Optional[Dict[str, Any]]:
    """The GPU's memory and load now; None when the run is not on a GPU."""
    if device != "cuda":
        return None
    index = int(torch.cuda.current_device())
    torch.empty(1, device="cuda")  # our own context exists now, and NVML lists this process
    found = _from_nvml(torch, index)
    if found is None:
        free, total = torch.cuda.mem_get_info(index)
        found = {"source": "torch", "free_mib": int(free) // MIB, "total_mib": int(total) // MIB,
                 "processes": None, "utilization": None}
    found["index"] = index
    found["busy"] = busy_reason(found)
    return found


def busy_reason(gpu: Dict[str, Any]) -> Optional[str]:
    """Why the GPU counts as shared with other work, or None."""
    others = [p for p in gpu.get("processes") or [] if not p["ours"]]
    reasons = []
    if others:
        used = sum(p["used_mib"] or 0 for p in others)
        reasons.append("%d other process(es) on GPU %d hold %d MiB" % (len(others), gpu["index"],
                                                                        used))
    utilization = gpu.get("utilization")
    # Utilisation counts only with other processes known: our own lanes compute too.
    if others and utilization is not None and utilization >= BUSY_UTILIZATION:
        reasons.append("GPU %d is %d%% busy" % (gpu["index"], utilization))
    return "; ".join(reasons) or None


def need_mib(score_elements: int, head_dim: int, token_elements: int) -> int:
    """Memory one case needs: the fp32 reference and the same-dtype PyTorch implementation each
    hold a few score matrices, plus inputs, outputs and gradients in three precisions."""
    scores = 6 * score_elements * 4
    tensors = 12 * token_elements * head_dim * 4
    return (scores + tensors) // MIB + 64
