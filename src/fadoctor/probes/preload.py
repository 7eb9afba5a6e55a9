"""The process an extension is imported into: the interpreter, then what `import torch` loads.

`torch_process(...)` plays torch's own loading code (`fadoctor.probes.torch_init`, read from the
installed torch/__init__.py) against the files, with the loader model of `fadoctor.probes.loader`:

1. the interpreter and its DT_NEEDED closure: the global scope;
2. `_load_global_deps`: lib/libtorch_global_deps.so dlopen'ed RTLD_GLOBAL (its closure joins the
   global scope); if that fails on a CUDA library, torch's list is preloaded from sys.path and the
   load retried; if it loads and the release's marker is mapped, the release's list is preloaded;
3. `from torch._C import *`: torch/_C and its closure, RTLD_LOCAL (global with rtld_global).

A preloaded library is dlopen'ed by path (ctypes.CDLL, RTLD_LOCAL): later DT_NEEDED entries find
it by soname, but its symbols are not global. What is loaded is what ld.so would match a
DT_NEEDED name against: the names objects were requested by, and their sonames.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple

from fadoctor.probes.elf import ElfError
from fadoctor.probes.loader import LoaderContext, Scoped, _Resolver, _walk, library_info
from fadoctor.probes.torch_init import CudaLib, PreloadRules, Search, read_rules


@dataclass
class Process:
    """A process under construction: what it has loaded, by name, and its global scope."""

    context: LoaderContext
    loaded: Dict[str, str] = field(default_factory=dict)  # name or soname -> path
    scope: List[Scoped] = field(default_factory=list)  # the global scope, in order
    preloaded: List[str] = field(default_factory=list)  # files torch preloaded itself, in order
    steps: List[str] = field(default_factory=list)  # what happened, for the evidence

    def dlopen(self, path: str, *, global_scope: bool, lenient: bool = False) -> Optional[str]:
        """Load `path` and its closure; the error ld.so would give, or None. A failed load leaves
        nothing loaded, as dlopen does, unless `lenient` (a torch whose import fails: whatever it
        did find is counted, so extensions are judged on their own failures)."""
        try:
            info = library_info(path)
        except ElfError as exc:
            return str(exc)
        resolver = _Resolver(replace(self.context, preloaded=dict(self.loaded)))
        walk = _walk(info, resolver, frozenset(os.path.realpath(p) for p in self.loaded.values()))
        error = None
        if walk.missing:
            error = f"{walk.missing[0].needed}: cannot open shared object file: No such file or directory"
        elif walk.unmet:
            unmet = walk.unmet[0]
            error = f"version `{unmet.version}' not found (required by {unmet.needed_by})"
        if error is None or lenient:
            self.loaded.update(resolver.loaded)
            self.loaded.setdefault(path, path)
            if info.soname:
                self.loaded.setdefault(info.soname, path)
            if global_scope:
                self.scope.extend(walk.closure)
        return error

    def loader_context(self) -> LoaderContext:
        return replace(self.context, preloaded=dict(self.loaded), global_scope=tuple(self.scope))


@dataclass(frozen=True)
class TorchProcess:
    context: LoaderContext  # to analyse an extension imported after torch
    rules: Optional[PreloadRules]  # None: torch's loading code was not recognised
    preloaded: Tuple[str, ...]  # the nvidia-* wheel libraries torch loads itself, in order
    steps: Tuple[str, ...]
    torch_error: Optional[str]  # what `import torch` itself raises, if it fails


def torch_process(python: str, environ: Dict[str, str], torch_dir: Optional[str],
                  sys_path: Sequence[str], cuda: Optional[str]) -> TorchProcess:
    """The process after `import torch` in `python` started with `environ` and `sys_path`."""
    process = Process(LoaderContext.for_interpreter(python, environ))
    _start_interpreter(process, python)
    if torch_dir is None:
        return _done(process, None, None)
    rules = _rules(torch_dir, environ)
    if rules is None:  # unknown loading code: count torch's lib/ as loaded, as before 2.0
        lib = os.path.join(torch_dir, "lib")
        for path in sorted(glob.glob(os.path.join(lib, "*.so*"))):
            process.dlopen(path, global_scope=False, lenient=True)
        process.steps.append("torch/__init__.py not recognised: every library in torch/lib counted as loaded")
        return _done(process, None, None)
    major = int(cuda.split(".")[0]) if cuda and cuda.split(".")[0].isdigit() else None
    error = _load_global_deps(process, rules, torch_dir, sys_path, major) if rules.global_deps else None
    extension = next(iter(sorted(glob.glob(os.path.join(torch_dir, "_C.*so")))), None)
    if extension is not None:
        failed = process.dlopen(extension, global_scope=rules.rtld_global, lenient=True)
        error = error or failed
        process.steps.append(f"torch._C: {failed or 'loaded'}")
    return _done(process, rules, error)


def _done(process: Process, rules: Optional[PreloadRules], error: Optional[str]) -> TorchProcess:
    return TorchProcess(process.loader_context(), rules, tuple(process.preloaded),
                        tuple(process.steps), error)


def _start_interpreter(process: Process, python: str) -> None:
    """The main program and its DT_NEEDED closure: the start of the global scope."""
    executable = os.path.realpath(python)
    if process.dlopen(executable, global_scope=True, lenient=True) is None:
        process.steps.append("the interpreter's libraries loaded")


def _rules(torch_dir: str, environ: Dict[str, str]) -> Optional[PreloadRules]:
    texts = []
    for name in ("__init__.py", "_utils_internal.py"):
        try:
            with open(os.path.join(torch_dir, name), encoding="utf-8", errors="replace") as handle:
                texts.append(handle.read())
        except OSError:
            texts.append("")
    return read_rules(texts[0], texts[1], bool(environ.get("TORCH_USE_RTLD_GLOBAL")))


def _load_global_deps(process: Process, rules: PreloadRules, torch_dir: str,
                      sys_path: Sequence[str], major: Optional[int]) -> Optional[str]:
    """`_load_global_deps`: the error `import torch` raises from it, or None."""
    path = os.path.join(torch_dir, "lib", "libtorch_global_deps.so")
    if not os.path.isfile(path):
        process.steps.append("no lib/libtorch_global_deps.so")
        return None
    error = process.dlopen(path, global_scope=True)
    if error is None:
        process.steps.append("libtorch_global_deps.so loaded RTLD_GLOBAL")
        mapped = [os.path.realpath(p) for p in process.loaded.values()]
        if rules.marker is not None and any(rules.marker in p for p in mapped):
            process.steps.append(f"{rules.marker!r} is mapped: torch preloads its CUDA libraries")
            # Up to 2.13 a library not found raises inside `try: ... except Exception: pass`.
            _preload(process, rules.after_load, rules.search, sys_path, major, stop_on_error=True)
        return None
    process.steps.append(f"libtorch_global_deps.so fails: {error}")
    if not any(lib.pattern.split(".", 1)[0] in error for lib in rules.on_failure):
        return error  # not about a library torch knows how to preload: re-raised
    failed = _preload(process, rules.on_failure, rules.search, sys_path, major, stop_on_error=True)
    if failed is not None:
        return failed
    error = process.dlopen(path, global_scope=True)
    process.steps.append(f"libtorch_global_deps.so retried: {error or 'loaded'}")
    return error


def _preload(process: Process, libs: Sequence[CudaLib], search: Search, sys_path: Sequence[str],
             major: Optional[int], stop_on_error: bool) -> Optional[str]:
    """ctypes.CDLL each library's first match on sys.path; the first error, which ends it."""
    for lib in libs:
        if lib.min_cuda is not None and (major is None or major < lib.min_cuda):
            continue
        path = find_cuda_lib(lib, search, sys_path, major)
        if path is None:
            if lib.required:
                process.steps.append(f"{lib.pattern} not found on sys.path: preloading stops")
                return f"{lib.pattern} not found in the system path"
            continue
        error = process.dlopen(path, global_scope=False)
        if error is not None:
            process.steps.append(f"preloading {path} fails: {error}")
            if stop_on_error:
                return error
            continue
        process.preloaded.append(path)
        process.steps.append(f"preloaded {path}")
    return None


def find_cuda_lib(lib: CudaLib, search: Search, sys_path: Sequence[str],
                  major: Optional[int]) -> Optional[str]:
    """The file torch's `_preload_cuda_deps` takes: the first sys.path entry with a match, and
    there the first match in glob's order (the directory's order, unsorted)."""
    for entry in sys_path:
        nvidia = os.path.join(entry, "nvidia")
        if search in (Search.NVIDIA, Search.NVIDIA_OR_FOLDER) and not os.path.exists(nvidia):
            continue
        found = glob.glob(os.path.join(nvidia, lib.folder, "lib", lib.pattern))
        if search == Search.DEP_PATHS_CU and major is not None:
            found += glob.glob(os.path.join(nvidia, f"cu{major}", "lib", lib.pattern))
        if search != Search.NVIDIA and not (search == Search.NVIDIA_OR_FOLDER and found):
            found += glob.glob(os.path.join(entry, lib.folder, "lib", lib.pattern))
        if found:
            return found[0]
    return None
