"""Stage `torch`: import torch and read its build, its CUDA view and its devices."""

import warnings
from typing import Any, Dict, List

from .context import Context
from .tables import TAIL


def warning_texts(caught: Any) -> List[str]:
    return [str(w.message).strip() for w in caught]


def run(context: Context) -> Dict[str, Any]:
    with context.importing("torch"):
        import torch  # the point of this stage

    data = {
        "version": str(torch.__version__),
        "file": getattr(torch, "__file__", None),
        "cuda": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
        "cxx11_abi": getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", None),
    }
    try:
        data["cudnn"] = torch.backends.cudnn.version()
    except Exception:
        data["cudnn"] = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            data["arch_list"] = list(torch.cuda.get_arch_list())
        except Exception:
            data["arch_list"] = []
        available = bool(torch.cuda.is_available())
        data["cuda_available"] = available
        devices = []
        if available:
            for i in range(torch.cuda.device_count()):
                major, minor = torch.cuda.get_device_capability(i)
                devices.append({"index": i, "name": torch.cuda.get_device_name(i),
                                "capability": "%d.%d" % (major, minor)})
        elif data["cuda"] or data["hip"]:
            try:
                torch.cuda.init()
            except Exception as exc:  # the reason torch gives for having no GPU
                data["cuda_error"] = ("%s: %s" % (type(exc).__name__, exc))[:TAIL]
        data["device_count"] = len(devices)
        data["devices"] = devices
    data["warnings"] = warning_texts(caught)
    if data.get("cuda_error") is None and not available and data["warnings"]:
        data["cuda_error"] = data["warnings"][0][:TAIL]
    return data
