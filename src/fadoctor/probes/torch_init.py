"""What `import torch` loads before anything else, read from the installed torch/__init__.py as text.

torch never imports here: its `_load_global_deps` and `_preload_cuda_deps` are read as text and
turned into `PreloadRules`, which `fadoctor.probes.preload` plays against the files. What each
release does, read from torch/__init__.py and torch/_utils_internal.py in the released wheels
(the same file in every platform's wheel of a release):

- 2.0-2.15: `_load_global_deps` loads lib/libtorch_global_deps.so RTLD_GLOBAL when
  `_utils_internal.USE_GLOBAL_DEPS` (True in the wheels), unless USE_RTLD_GLOBAL_WITH_LIBTORCH or
  TORCH_USE_RTLD_GLOBAL make `from torch._C import *` itself RTLD_GLOBAL. A CPU build's
  global deps need no CUDA library and load, so a CPU torch preloads no nvidia-* wheel library.
- 2.0-2.15: when that load fails (OSError) on a library of the list, each (folder, glob) is
  preloaded from sys.path (the first entry with a match, the first match in directory order),
  then the load is retried; a required library not found raises and `import torch` fails.
  2.0's list globs "libcudart.so.*[0-9].*[0-9]" (CUDA 11's libcudart.so.11.0), 2.1 and later
  "libcudart.so.*[0-9]"; 2.5 adds nvjitlink, 2.6 cusparselt, 2.7-2.8 cufile for CUDA >= 12,
  2.9 nvshmem and cufile, 2.11 cublasLt first, 2.15 drops curand; nvtx (libnvToolsExt) is
  required up to 2.7, gone in 2.8, optional from 2.9.
- 2.6-2.8: after a successful load, when "nvidia/cuda_runtime/lib/libcudart.so" is in
  /proc/self/maps, libnvrtc and libnvJitLink are preloaded (pytorch#138460, #145580); 2.9 adds
  libnvrtc-builtins and the marker becomes "libcudart.so"; 2.10-2.13 preload the whole list
  there; 2.14-2.15 do it with required=False. The whole step sits in `try: ... except Exception:
  pass`, so up to 2.13 the first library not found ends it silently.
- Where a library is searched: 2.0-2.5 <entry>/nvidia/<folder>/lib, for entries with an nvidia/
  folder; 2.6 also <entry>/<folder>/lib when that found nothing; 2.7-2.8 both, nvidia/ first
  (`_get_cuda_dep_paths`); 2.9 and later <entry>/nvidia/cu<CUDA major>/lib in between.
Not modelled: 2.4's split build ("libtorchsplit"), torch::deploy, Windows and macOS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterator, List, Optional, Tuple


class Search(str, Enum):
    """Where `_preload_cuda_deps` looks for a library in each sys.path entry."""

    NVIDIA = "nvidia"  # 2.0-2.5: <entry>/nvidia/<folder>/lib, entries with an nvidia/ folder only
    NVIDIA_OR_FOLDER = "nvidia-or-folder"  # 2.6: ... else <entry>/<folder>/lib
    DEP_PATHS = "dep-paths"  # 2.7-2.8: <entry>/nvidia/<folder>/lib + <entry>/<folder>/lib
    DEP_PATHS_CU = "dep-paths-cu"  # 2.9+: ... + <entry>/nvidia/cu<major>/lib between them


@dataclass(frozen=True)
class CudaLib:
    folder: str  # "cuda_runtime": <entry>/nvidia/cuda_runtime/lib
    pattern: str  # "libcudart.so.*[0-9]", a glob
    required: bool = True  # not found: raises (the load fails, or the preloading stops)
    min_cuda: Optional[int] = None  # only for torch builds of at least this CUDA major


@dataclass(frozen=True)
class PreloadRules:
    """torch's own loading code, as data."""

    global_deps: bool  # libtorch_global_deps.so is loaded RTLD_GLOBAL first
    rtld_global: bool  # torch._C and everything it loads join the global scope
    on_failure: Tuple[CudaLib, ...]  # preloaded when loading the global deps fails, then retried
    marker: Optional[str]  # after a successful load: preload `after_load` if this is mapped
    after_load: Tuple[CudaLib, ...]
    search: Search


_PAIR = re.compile(r"""["'](\w+)["']\s*[:,]\s*["'](lib[\w.*\[\]-]+)["'](\s*,\s*required\s*=\s*False)?""")
_ASSIGNED = re.compile(r"""cuda_libs\[["'](\w+)["']\]\s*=\s*["'](lib[\w.*\[\]-]+)["']""")
_MARKER = re.compile(r"""if\s+["']([^"']+)["']\s+not\s+in\s+_maps""")
_MIN_MAJOR = re.compile(r"t_major\s*>=\s*(\d+)")


def _function(text: str, name: str) -> str:
    """The source of top-level function `name`, up to the next top-level statement."""
    found = re.search(rf"^def {name}\(.*?(?=^\S)", text + "\n#", re.M | re.S)
    return found.group(0) if found else ""


def _pairs(code: str) -> Iterator[CudaLib]:
    for match in _PAIR.finditer(code):
        yield CudaLib(match.group(1), match.group(2), required=not match.group(3))
    minimum = _MIN_MAJOR.search(code)
    for match in _ASSIGNED.finditer(code):
        yield CudaLib(match.group(1), match.group(2), min_cuda=int(minimum.group(1)) if minimum else None)


def _listed(code: str, preload_deps: str) -> List[CudaLib]:
    """The libraries a step preloads: written out in it (2.0-2.9), or `_preload_cuda_deps`'s
    list when it calls that with no folder (2.10+); `required=False` on the call (2.14) makes
    each of them optional."""
    listed = list(_pairs(code))
    call = re.search(r"_preload_cuda_deps\((err)?\s*(,\s*)?(required\s*=\s*False)?\s*\)", code)
    if call:
        optional = bool(call.group(3))
        listed += [CudaLib(lib.folder, lib.pattern, lib.required and not optional, lib.min_cuda)
                   for lib in _pairs(preload_deps)]
    return listed


def _search(text: str, preload_deps: str) -> Search:
    dep_paths = _function(text, "_get_cuda_dep_paths")
    if dep_paths:
        return Search.DEP_PATHS_CU if "cu{" in dep_paths else Search.DEP_PATHS
    if re.search(r"os\.path\.join\(\s*path\s*,\s*lib_folder", preload_deps):
        return Search.NVIDIA_OR_FOLDER
    return Search.NVIDIA


def _flag(utils_internal: str, name: str, default: bool) -> bool:
    found = re.search(rf"^{name}\s*=\s*(True|False)\s*$", utils_internal, re.M)
    return default if found is None else found.group(1) == "True"


def read_rules(init_text: str, utils_internal_text: str, rtld_global_env: bool) -> Optional[PreloadRules]:
    """The rules of torch/__init__.py `init_text`; None when it has no `_load_global_deps` this
    reader knows (a torch older than 2.0, or one whose loading code changed beyond it)."""
    load = _function(init_text, "_load_global_deps")
    if "libtorch_global_deps" not in load:
        return None
    preload_deps = _function(init_text, "_preload_cuda_deps")
    tried, _, failed = load.partition("except OSError")
    marker = _MARKER.search(tried)
    rtld_global = _flag(utils_internal_text, "USE_RTLD_GLOBAL_WITH_LIBTORCH", False) or rtld_global_env
    return PreloadRules(
        global_deps=_flag(utils_internal_text, "USE_GLOBAL_DEPS", True) and not rtld_global,
        rtld_global=rtld_global,
        on_failure=tuple(_listed(failed, preload_deps)),
        marker=marker.group(1) if marker else None,
        after_load=tuple(_listed(tried[marker.end():], preload_deps)) if marker else (),
        search=_search(init_text, preload_deps))
