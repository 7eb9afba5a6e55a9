"""Every compiled extension that links torch, predicted from the files and held against real loads:
torchvision, torchaudio and xformers wheels from the package index beside the real CPU torch 2.13
(each file then dlopened after `import torch` in a child: the oracle), and beside the CUDA torch
2.14.1 wheel with stray CUDA 11 and 12 runtime wheels (torch's own preloading, read from its
__init__.py). The wheels are unpacked once into FADOCTOR_TEST_CACHE; .ci/run downloads them."""

from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from tests.helpers.broken import environ_with_path, requires_torch
from tests.helpers.elf_fixtures import ldd_undefined
from tests.test_static_real_wheels import cached, unpacked

from fadoctor.collect.run import collect
from fadoctor.collect.target import CollectOptions
from fadoctor.evaluate import evaluate
from fadoctor.facts.binaries import BinaryAnalysis
from fadoctor.facts.model import Facts
from fadoctor.matrix import load_matrix
from fadoctor.probes.elf import read_elf
from fadoctor.probes.loader import missing_symbols
from fadoctor.report import Category

pytestmark = [pytest.mark.slow, requires_torch]

OLD = ["torchvision-0.19.0-cp311-cp311-manylinux1_x86_64.whl",  # torch 2.4.0, CUDA 12, ABI 0
       "torchaudio-2.4.0-cp311-cp311-manylinux1_x86_64.whl",
       "xformers-0.0.28.post1-cp311-cp311-manylinux_2_28_x86_64.whl"]  # torch 2.4.1
NEW = ["torchvision-0.29.1-cp311-cp311-manylinux_2_28_x86_64.whl"]  # torch 2.14, CUDA 13
RUNTIME_12 = "nvidia_cuda_runtime_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl"
RUNTIME_11 = "nvidia_cuda_runtime_cu11-11.8.89-py3-none-manylinux2014_x86_64.whl"
RUNTIME_13 = "nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
TORCH_CU130 = "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl"

REAL_LOAD = """
import ctypes, sys
import torch
for path in sys.argv[1:]:
    try:
        ctypes.CDLL(path)
        print("LOADS")
    except OSError as exc:
        print(str(exc).replace("\\n", " "))
"""


def site(tmp: Path, wheels: List[str]) -> Path:
    """One folder laid out as site-packages: each wheel's files, linked in from its unpacked copy
    (a wheel is a zip laid out as site-packages), the nvidia/ folders merged."""
    for wheel in wheels:
        root = unpacked(cached(wheel))
        for entry in root.iterdir():
            if entry.name == "nvidia":
                for lib in entry.glob("*/lib"):
                    (tmp / "nvidia" / lib.parent.name / "lib").mkdir(parents=True, exist_ok=True)
                    for so in lib.iterdir():
                        if not (tmp / "nvidia" / lib.parent.name / "lib" / so.name).exists():
                            os.symlink(so, tmp / "nvidia" / lib.parent.name / "lib" / so.name)
            elif not entry.name.startswith("."):
                os.symlink(entry, tmp / entry.name)
    return tmp


def real_loads(paths: List[str], env: Dict[str, str]) -> List[str]:
    done = subprocess.run([sys.executable, "-c", REAL_LOAD, *paths], env=env, capture_output=True,
                          text=True, timeout=600, check=True)
    return done.stdout.splitlines()


def binaries(facts: Facts) -> List[BinaryAnalysis]:
    assert facts.binaries is not None and facts.binaries.data is not None
    return facts.binaries.data


@pytest.mark.parametrize("wheels", [NEW, [*OLD, RUNTIME_12]], ids=["torch-2.14-builds", "torch-2.4-builds"])
def test_beside_cpu_torch_each_prediction_is_the_real_load(tmp_path: Path, wheels: List[str]) -> None:
    root = site(tmp_path, wheels)  # with the old builds, a stray CUDA 12 runtime wheel too
    env = environ_with_path(root)
    facts = collect(CollectOptions(python=sys.executable, environ=env, static=True))
    found = binaries(facts)
    assert facts.torch_load is not None and facts.torch_load.preloaded == []  # a CPU torch
    assert {b.file.distribution for b in found} == {
        w.split("-")[0] for w in wheels if not w.startswith("nvidia")}
    assert all(b.file.path.startswith(str(root)) for b in found)
    real = real_loads([b.file.path for b in found], env)
    predicted = [b.first_failure.message if b.first_failure else "LOADS" for b in found]
    assert predicted == real
    if wheels == NEW:
        return
    # The stray runtime is on disk, but a CPU torch never loads it: libcudart.so.12 comes first.
    xformers = next(b for b in found if b.file.distribution == "xformers")
    assert xformers.first_failure is not None and xformers.first_failure.name == "libcudart.so.12"

    report = evaluate(facts, load_matrix())
    libraries = next(c for c in report.checks if c.id == "FAD130").findings
    by_path = {f.evidence["path"]: f for f in libraries if f.category != Category.INFO}
    assert by_path[xformers.file.path].category == Category.TORCH_CPU_ONLY
    sibling = by_path[next(b.file.path for b in found if b.file.path.endswith("/_torchaudio.so"))]
    assert sibling.category == Category.WRONG_WHEEL and "torchaudio itself" in sibling.message
    sox = by_path[next(b.file.path for b in found if b.file.path.endswith("/libtorchaudio_sox.so"))]
    assert sox.category == Category.NOT_INSTALLED
    symbols = next(c for c in report.checks if c.id == "FAD131").findings
    assert not any(f.category == Category.TORCH_VERSION_MISMATCH and "c10::cuda" in f.message
                   for f in symbols)


def test_remedy_is_the_release_pinned_to_the_installed_torch(tmp_path: Path) -> None:
    root = site(tmp_path, OLD[:1])
    facts = collect(CollectOptions(python=sys.executable, environ=environ_with_path(root),
                                   static=True))
    [vision, *_] = [b for b in binaries(facts) if b.file.path.endswith("/_C.so")]
    assert (vision.file.distribution, vision.file.requires_torch) == ("torchvision", "==2.4.0")
    report = evaluate(facts, load_matrix())
    finding = next(f for c in report.checks if c.id == "FAD130" for f in c.findings
                   if f.evidence.get("path") == vision.file.path)
    commands = [c for r in finding.remedies for c in r.commands]
    assert commands and "torchvision" in commands[0] and "torch==2.13.0+cpu" in commands[0]
    # Whether such a release exists is not known offline: the remedies say what pip's refusal means.
    assert any("ResolutionImpossible" in r.summary and "uninstall torchvision" in r.summary
               and not r.commands for r in finding.remedies)


def test_missing_symbols_are_ldd_r_s(tmp_path: Path) -> None:
    """The missing set of a real extension against the real torch libraries equals `ldd -r`'s."""
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    lib = Path(spec.origin).parent / "lib"
    ext = unpacked(cached(OLD[2])) / "xformers" / "_C.so"
    oracle = set(ldd_undefined(ext, str(lib)))
    from fadoctor.probes.loader import LoaderContext, analyze

    closure = analyze(ext, LoaderContext(ld_library_path=str(lib))).libraries
    ours = {(s.name, s.version) for s in missing_symbols(read_elf(ext), closure)}
    assert ours == oracle and len(oracle) > 50
    assert any(version == "libcudart.so.12" for _, version in oracle)  # versioned, not found


def test_cuda_torch_preloads_only_what_its_code_globs_for(tmp_path: Path) -> None:
    root = site(tmp_path, [TORCH_CU130, RUNTIME_13, RUNTIME_11, RUNTIME_12, OLD[2]])
    facts = collect(CollectOptions(python=sys.executable, environ=environ_with_path(root),
                                   static=True))
    load = facts.torch_load
    assert load is not None and load.rules is not None and "2.14.1" in load.rules
    assert "libtorch_global_deps.so loaded RTLD_GLOBAL" in load.steps
    # torch 2.14's _preload_cuda_deps globs nvidia/cuda_runtime/lib/libcudart.so.*[0-9] and takes
    # the first match in the directory's order: one runtime, never both.
    first = glob.glob(str(root / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.*[0-9]"))[0]
    runtimes = [p for p in load.preloaded if "/cuda_runtime/" in p]
    assert runtimes == [first]
    assert load.torch_error is not None  # cuBLAS and the rest are not installed here
    [xformers] = [b for b in binaries(facts) if b.file.distribution == "xformers"]
    missing = [lib.name for lib in xformers.needed if lib.path is None]
    assert ("libcudart.so.12" in missing) == first.endswith(".so.11.0")
    # Beside libcudart.so.13, a reference to cudaX@libcudart.so.12 stays undefined.
    if first.endswith(".so.11.0"):
        assert any(s.version == "libcudart.so.12" for s in xformers.missing_symbols)
