"""The child that runs inside the target interpreter: imports torch and flash-attention, speaks JSON.

Standard library only, and Python 3.8 syntax: it runs under whatever interpreter the user trains
with. It writes one JSON record per event to the file descriptor given with `--fd` (stdout and
stderr stay free for whatever the imported libraries print):

    {"event": "start", "stage": "torch"}
    {"event": "result", "stage": "torch", "ok": true, "data": {...}}
    {"event": "result", "stage": "fa2", "ok": false, "failure": {...}}

A stage that kills the process (segfault, abort) or hangs never writes its result; the parent
sees which stage had started, records the failure and starts a new worker past it.
"""

import faulthandler
import json
import os
import platform
import re
import sys
import traceback
import warnings
from typing import Any, Dict, List, Optional, Tuple

# Families: the distributions that provide each one (canonical names) and the modules to import.
# The parent imports this table too, so both sides agree on what "installed" means.
FAMILIES = {
    "fa2": {"distributions": ["flash-attn"], "modules": ["flash_attn"],
            "extensions": ["flash_attn_2_cuda", "flash_attn_cuda"],
            "markers": ["flash_attn_2_cuda", "flash_attn_cuda"],
            # flash-attention's optional csrc/ extensions, each built by its own setup.py.
            "optional": ["dropout_layer_norm", "rotary_emb", "xentropy_cuda_lib",
                         "fused_softmax_lib", "fused_dense_lib"]},
    "fa3": {"distributions": ["flash-attn-3"],
            "modules": ["flash_attn_interface", "flash_attn_3.flash_attn_interface"],
            "extensions": ["flash_attn_3._C", "flash_attn_3_cuda", "flash_attn_3_gpu"],
            "markers": ["flash_attn_interface", "flash_attn_3"]},
    "fa4": {"distributions": ["flash-attn-4", "flash-attn4"], "modules": ["flash_attn.cute"],
            "extensions": [], "markers": []},
    # The vllm-flash-attn 2.6.2 wheel: package vllm_flash_attn, extension vllm_flash_attn_2_cuda.
    "vllm_fa": {"distributions": ["vllm-flash-attn"], "modules": ["vllm_flash_attn"],
                "extensions": ["vllm_flash_attn_2_cuda"],
                "markers": ["vllm_flash_attn", "vllm_flash_attn_2_cuda"]},
}

# Distributions worth reporting (canonical names or prefixes ending in "-").
INTERESTING = (
    "torch", "flash-attn", "flash-attn-3", "flash-attn-4", "flash-attn4", "vllm-flash-attn",
    "xformers", "triton", "pytorch-triton", "pytorch-triton-rocm", "transformers", "accelerate",
    "peft", "vllm", "deepspeed", "einops", "ninja", "packaging", "unsloth", "bitsandbytes",
    "nvidia-", "cuda-", "apache-tvm-ffi", "quack-kernels", "torch-c-dlpack-ext",
)

# Environment variables that change what torch and flash-attention do (exact names, or prefixes
# ending in "_").
ENVIRONMENT = (
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
    "LD_PRELOAD", "PYTHONPATH", "TORCH_CUDA_ARCH_LIST", "CUDA_MODULE_LOADING", "MAX_JOBS",
    "NVCC_THREADS", "FLASH_ATTENTION_", "FLASH_ATTN_", "PYTORCH_", "TORCHDYNAMO_", "TORCHINDUCTOR_",
    "TORCH_CUDNN_", "CUTE_DSL_", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "BUILD_TARGET",
    "GPU_ARCHS",
)

STAGES = ("host", "packages", "files", "torch", "sdpa", "fa2", "fa3", "fa4", "vllm_fa")
# The stages that import nothing of torch or flash-attention (`check --static`).
STATIC_STAGES = ("host", "packages", "files")

_TAIL = 4000


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def interesting(name: str) -> bool:
    for item in INTERESTING:
        if name == item or (item.endswith("-") and name.startswith(item)):
            return True
    return False


def stage_host() -> Dict[str, Any]:
    libc, libc_version = None, None
    try:
        parts = (os.confstr("CS_GNU_LIBC_VERSION") or "").split()
        if len(parts) == 2:
            libc, libc_version = "glibc", parts[1]
    except (AttributeError, ValueError, OSError):
        pass
    if libc is None:
        name, version = platform.libc_ver()
        libc, libc_version = (name or None), (version or None)
    pretty = None
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path) as fh:
                for line in fh:
                    if line.startswith("PRETTY_NAME="):
                        pretty = line.split("=", 1)[1].strip().strip('"')
            break
        except OSError:
            continue
    import sysconfig

    abi = "cp%d%d" % sys.version_info[:2]
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        abi += "t"
    return {
        "os": platform.system(),
        "os_release": pretty,
        "machine": platform.machine(),
        "libc": libc,
        "libc_version": libc_version,
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "python_abi_tag": abi if platform.python_implementation() == "CPython" else None,
        "prefix": sys.prefix,
        "cpus": os.cpu_count(),
        "memory_mib": _memory_mib(),
        "environment": {k: v for k, v in os.environ.items()
                        if any(k == e or (e.endswith("_") and k.startswith(e))
                               for e in ENVIRONMENT)},
    }


def _memory_mib() -> Optional[int]:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024))
    except (AttributeError, ValueError, OSError):
        return None


def _read(dist: Any, name: str) -> Optional[str]:
    try:
        text = dist.read_text(name)
        return str(text) if text is not None else None
    except Exception:
        return None


def stage_packages() -> Dict[str, Any]:
    from importlib import metadata

    out = []
    for dist in metadata.distributions():
        raw = dist.metadata["Name"] if dist.metadata else None
        if not raw:
            continue
        name = canonical(raw)
        if not interesting(name):
            continue
        try:
            location = str(dist.locate_file(""))
        except Exception:
            location = None
        direct = None
        text = _read(dist, "direct_url.json")
        if text:
            try:
                direct = json.loads(text).get("url")
            except ValueError:
                direct = None
        top = _read(dist, "top_level.txt")
        installer = _read(dist, "INSTALLER")
        out.append({
            "name": name,
            "version": dist.version,
            "location": location,
            "installer": installer.strip() if installer else None,
            "direct_url": direct,
            "top_level": [t.strip() for t in top.splitlines() if t.strip()] if top else [],
        })
    out.sort(key=lambda d: (d["name"], d["location"] or ""))
    return {"distributions": out}


def _warning_texts(caught: Any) -> List[str]:
    return [str(w.message).strip() for w in caught]


def stage_torch() -> Dict[str, Any]:
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
                data["cuda_error"] = ("%s: %s" % (type(exc).__name__, exc))[:_TAIL]
        data["device_count"] = len(devices)
        data["devices"] = devices
    data["warnings"] = _warning_texts(caught)
    if data.get("cuda_error") is None and not available and data["warnings"]:
        data["cuda_error"] = data["warnings"][0][:_TAIL]
    return data


def _sdpa_params(torch: Any, q: Any, k: Any, v: Any) -> Any:
    cls = torch.backends.cuda.SDPAParams
    try:  # torch >= 2.5: (query, key, value, mask, dropout, is_causal, enable_gqa)
        return cls(q, k, v, None, 0.0, True, False)
    except TypeError:  # torch 2.2-2.4
        return cls(q, k, v, None, 0.0, True)


def _can_use(torch: Any, fn_name: str, params: Any) -> Tuple[Optional[bool], List[str]]:
    fn = getattr(torch.backends.cuda, fn_name, None)
    if fn is None:
        return None, ["torch %s has no torch.backends.cuda.%s" % (torch.__version__, fn_name)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ok = bool(fn(params, True))
    return ok, [] if ok else _warning_texts(caught)


def stage_sdpa() -> Dict[str, Any]:
    import torch

    cuda = torch.backends.cuda
    switches = {
        "flash": "flash_sdp_enabled", "efficient": "mem_efficient_sdp_enabled",
        "cudnn": "cudnn_sdp_enabled", "math": "math_sdp_enabled",
    }
    checks = {"flash": "can_use_flash_attention", "efficient": "can_use_efficient_attention",
              "cudnn": "can_use_cudnn_attention"}
    compiled = {"flash": getattr(cuda, "is_flash_attention_available", None)}
    backends = []
    params, why_not = None, None
    if torch.cuda.is_available() and torch.version.cuda and hasattr(cuda, "SDPAParams"):
        # A representative training shape: bf16, batch 1, 8 heads, 128 tokens, head dim 64.
        shape = (1, 8, 128, 64)
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        params = _sdpa_params(torch, q, k, v)
    elif not torch.cuda.is_available():
        why_not = "CUDA is not available to torch"
    else:
        why_not = "torch %s cannot report SDPA backend eligibility" % torch.__version__
    for name in ("flash", "efficient", "cudnn", "math"):
        switch = getattr(cuda, switches[name], None)
        entry: Dict[str, Any] = {"name": name, "enabled": bool(switch()) if switch else None, "reasons": []}
        fn = compiled.get(name)
        entry["compiled"] = bool(fn()) if fn else None
        if name == "math":
            entry["usable"] = entry["enabled"]
        elif params is not None:
            entry["usable"], entry["reasons"] = _can_use(torch, checks[name], params)
        else:
            entry["usable"], entry["reasons"] = None, [why_not]
        backends.append(entry)
    return {"sdpa": backends}


def _read_version_py(path: str) -> Dict[str, Any]:
    """torch/version.py's assignments, read as text: torch is not imported."""
    import ast

    out: Dict[str, Any] = {}
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError:
        return out
    for match in re.finditer(r"^(__version__|cuda|hip|git_version)\s*(?::[^=\n]+)?=\s*(.+)$",
                             text, re.M):
        try:
            out[match.group(1).strip("_")] = ast.literal_eval(match.group(2).strip())
        except (ValueError, SyntaxError):
            continue
    return out


def _locate(name: str) -> Optional[str]:
    """The file a module would load from, found without importing it or its package."""
    import importlib.machinery
    import importlib.util

    top, _, rest = name.partition(".")
    try:
        spec = importlib.util.find_spec(top)  # a top-level find_spec imports nothing
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if not rest:
        return spec.origin
    for folder in spec.submodule_search_locations or []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = os.path.join(folder, *rest.split(".")) + suffix
            if os.path.isfile(candidate):
                return candidate
    return None


def _wheel_libraries() -> List[str]:
    """Shared libraries of the nvidia-* wheels (site-packages/nvidia/*/lib), which torch loads
    itself before any extension is imported."""
    out: List[str] = []
    for entry in sys.path:
        root = os.path.join(entry or os.curdir, "nvidia")
        if not os.path.isdir(root):
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            if dirpath[len(root):].count(os.sep) >= 3:
                dirnames[:] = []
            if os.path.basename(dirpath) in ("lib", "lib64"):
                out.extend(os.path.join(dirpath, f) for f in sorted(filenames) if ".so" in f)
    return out


def stage_files() -> Dict[str, Any]:
    """Where torch and each family's compiled extensions lie, for the static analysis."""
    torch: Optional[Dict[str, Any]] = None
    origin = _locate("torch")
    if origin:
        folder = os.path.dirname(origin)
        lib = os.path.join(folder, "lib")
        torch = {"dir": folder, "lib_dir": lib if os.path.isdir(lib) else None}
        torch.update(_read_version_py(os.path.join(folder, "version.py")))
    extensions = []
    for family, spec in FAMILIES.items():
        for name in spec["extensions"] + spec.get("optional", []):
            path = _locate(name)
            if path and not path.endswith(".py"):
                extensions.append({"family": family, "module": name, "path": path})
    scan = _sibling("extscan")
    return {"torch": torch, "extensions": extensions, "wheel_libraries": _wheel_libraries(),
            "sys_path": [os.path.abspath(p or os.curdir) for p in sys.path],
            "linked": scan.torch_extensions(sys.path, torch["dir"] if torch else None)}


def _sibling(name: str) -> Any:
    """A standard-library module beside this file, loaded by path: the worker runs as a script
    with its own folder taken off sys.path."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location("_fadoctor_" + name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _find_spec(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _family_installed(family: str, dists: Dict[str, str]) -> Tuple[Optional[str], Optional[str]]:
    spec = FAMILIES[family]
    for dist in spec["distributions"]:
        if dist in dists:
            return dist, dists[dist]
    return None, None


def _import_extensions(names: List[str]) -> List[Dict[str, Any]]:
    """Import each compiled extension that is present (a package's __init__ may not have)."""
    import importlib

    out = []
    for name in names:
        if name not in sys.modules and ("." in name or not _find_spec(name)):
            continue  # absent, or a submodule its package did not load
        try:
            module = importlib.import_module(name)
        except BaseException as exc:
            out.append({"module": name, "ok": False, "error": ("%s" % exc)[:_TAIL],
                        "exception_type": type(exc).__name__})
            continue
        out.append({"module": name, "ok": True, "file": getattr(module, "__file__", None)})
    return out


def stage_family(family: str, dists: Dict[str, str]) -> Dict[str, Any]:
    import importlib

    spec = FAMILIES[family]
    dist, version = _family_installed(family, dists)
    # Without metadata (a source-tree install, a copied folder), a top-level module still counts.
    if dist is None and not any(_find_spec(m) for m in spec["markers"]):
        return {"installed": False}
    result: Dict[str, Any] = {"installed": True, "distribution": dist, "version": version}
    try:
        # Every family needs torch; a torch failure is not the family's.
        importlib.import_module("torch")
    except BaseException as exc:
        result["import"] = {"ok": False, "failure": {
            "kind": "skipped", "reason": "needs torch, which failed to import: %s: %s"
            % (type(exc).__name__, exc), "exception_type": type(exc).__name__}}
        return result
    last: Optional[BaseException] = None
    for module_name in spec["modules"]:
        try:
            module = importlib.import_module(module_name)
        except BaseException as exc:  # ImportError, OSError, RuntimeError, SystemExit ...
            if last is None or not isinstance(exc, ModuleNotFoundError):
                last = exc
            if isinstance(exc, ModuleNotFoundError) and exc.name and module_name.startswith(
                    exc.name):
                continue  # this spelling of the module is absent; try the next one
            break
        extensions = _import_extensions(spec["extensions"] + spec.get("optional", []))
        loaded = [e["file"] for e in extensions
                  if e["ok"] and e["module"] in spec["extensions"]]
        result["import"] = {"ok": True, "data": {
            "module": module_name, "file": getattr(module, "__file__", None),
            "version": str(getattr(module, "__version__", "")) or None,
            "extension": loaded[0] if loaded else None, "extensions": extensions}}
        return result
    assert last is not None
    tb = "".join(traceback.format_exception(type(last), last, last.__traceback__))
    result["import"] = {"ok": False, "failure": {
        "kind": "import_error", "reason": ("%s" % last)[:_TAIL],
        "exception_type": type(last).__name__, "traceback_tail": tb[-_TAIL:]}}
    return result


def main(argv: List[str]) -> int:
    fd, stages = None, list(STAGES)
    i = 0
    while i < len(argv):
        if argv[i] == "--fd":
            fd = int(argv[i + 1])
            i += 2
        elif argv[i] == "--stages":
            stages = [s for s in argv[i + 1].split(",") if s]
            i += 2
        else:
            i += 1
    out = os.fdopen(fd, "w", buffering=1) if fd is not None else sys.stdout

    def emit(record: Dict[str, Any]) -> None:
        out.write(json.dumps(record, default=str) + "\n")
        out.flush()

    dists = None
    for stage in stages:
        emit({"event": "start", "stage": stage})
        try:
            if stage == "host":
                data = stage_host()
            elif stage == "packages":
                data = stage_packages()
                dists = {d["name"]: d["version"] for d in data["distributions"]}
            elif stage == "files":
                data = stage_files()
            elif stage == "torch":
                data = stage_torch()
            elif stage == "sdpa":
                data = stage_sdpa()
            elif stage in FAMILIES:
                if dists is None:
                    dists = {d["name"]: d["version"] for d in stage_packages()["distributions"]}
                data = stage_family(stage, dists)
            else:
                raise ValueError("unknown stage %r" % stage)
            emit({"event": "result", "stage": stage, "ok": True, "data": data})
        except BaseException as exc:
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            emit({"event": "result", "stage": stage, "ok": False, "failure": {
                "kind": "import_error" if isinstance(exc, (ImportError, OSError)) else "error",
                "reason": ("%s" % exc)[:_TAIL], "exception_type": type(exc).__name__,
                "traceback_tail": tb[-_TAIL:]}})
    emit({"event": "done"})
    return 0


if __name__ == "__main__":
    # Our own folder must not shadow the user's imports: drop it from the path.
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    faulthandler.enable()
    status = main(sys.argv[1:])
    # Skip interpreter teardown: unloading torch and CUDA is slow and can itself crash, and
    # everything the parent needs has been written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
