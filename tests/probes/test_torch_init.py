"""torch's loading code read as text: the installed CPU torch 2.13 and the CUDA torch 2.14.1 wheel
(its torch/__init__.py read from the zip, never imported)."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import pytest
from tests.helpers.broken import requires_torch
from tests.test_static_real_wheels import TORCH_WHEEL, cached

from fadoctor.probes.torch_init import Search, read_rules


@requires_torch
def test_torch_2_13_preloads_every_library_required_once_libcudart_is_mapped() -> None:
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    folder = Path(spec.origin).parent
    rules = read_rules((folder / "__init__.py").read_text(),
                       (folder / "_utils_internal.py").read_text(), rtld_global_env=False)
    assert rules is not None and rules.global_deps and not rules.rtld_global
    assert rules.marker == "libcudart.so" and rules.search == Search.DEP_PATHS_CU
    assert [lib.folder for lib in rules.after_load][:2] == ["cublas", "cublas"]  # cublasLt first
    assert all(lib.required for lib in rules.after_load if lib.folder != "nvtx")
    assert ("cuda_runtime", "libcudart.so.*[0-9]") in {(lib.folder, lib.pattern)
                                                       for lib in rules.on_failure}
    env = read_rules((folder / "__init__.py").read_text(), "", rtld_global_env=True)
    assert env is not None and env.rtld_global and not env.global_deps


@pytest.mark.slow
def test_torch_2_14_makes_the_preloading_after_a_load_best_effort() -> None:
    with zipfile.ZipFile(cached(TORCH_WHEEL)) as wheel:
        init = wheel.read("torch/__init__.py").decode()
        internal = wheel.read("torch/_utils_internal.py").decode()
    rules = read_rules(init, internal, rtld_global_env=False)
    assert rules is not None and rules.marker == "libcudart.so"
    assert not any(lib.required for lib in rules.after_load)  # _preload_cuda_deps(required=False)
    assert all(lib.required for lib in rules.on_failure if lib.folder != "nvtx")


def test_unknown_loading_code_is_unknown() -> None:
    assert read_rules("import ctypes\n", "", rtld_global_env=False) is None
