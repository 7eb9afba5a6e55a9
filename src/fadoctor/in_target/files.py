"""Stage `files`: where torch and each family's compiled extensions lie, found without importing
them, for the static analysis."""

import os
import re
import sys
from typing import Any, Dict, List, Optional

from . import extscan
from .context import Context
from .tables import FAMILIES


def run(context: Context) -> Dict[str, Any]:
    torch = None  # type: Optional[Dict[str, Any]]
    origin = locate("torch")
    if origin:
        folder = os.path.dirname(origin)
        lib = os.path.join(folder, "lib")
        torch = {"dir": folder, "lib_dir": lib if os.path.isdir(lib) else None}
        torch.update(_read_version_py(os.path.join(folder, "version.py")))
    extensions = []
    for family, spec in FAMILIES.items():
        for name in spec["extensions"] + spec.get("optional", []):
            path = locate(name)
            if path and not path.endswith(".py"):
                extensions.append({"family": family, "module": name, "path": path})
    return {"torch": torch, "extensions": extensions, "wheel_libraries": _wheel_libraries(),
            "sys_path": [os.path.abspath(p or os.curdir) for p in sys.path],
            "linked": extscan.torch_extensions(sys.path, torch["dir"] if torch else None)}


def _read_version_py(path: str) -> Dict[str, Any]:
    """torch/version.py's assignments, read as text: torch is not imported."""
    import ast

    out = {}  # type: Dict[str, Any]
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


def locate(name: str) -> Optional[str]:
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
    out = []  # type: List[str]
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
