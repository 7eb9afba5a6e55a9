"""The build-frontend, compiler and loader messages of the catalog (tools/build_sources.py): read
from real files and git tags, every recorded one catalogued with a release range that holds it,
each printed form triaged to its category with a remedy that names the fix, and a hand-written
mechanism corroborated, never overridden."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, List

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.catalog_data import TOOLCHAIN, Entry, entries
from fadoctor.triage.diagnose import triage

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "build_excerpts.yaml"
BUILD = [e for e in entries() if e.source in TOOLCHAIN]
# What each category's remedy must name: the flag, the env var, the compiler version.
FIX = {Category.BUILD_ISOLATION: "--no-build-isolation", Category.BUILD_RESOURCES: "MAX_JOBS=",
       Category.GLIBC_TOO_OLD: "glibc", Category.TORCH_VERSION_MISMATCH: "flash-attn",
       Category.CUDA_RUNTIME_MISMATCH: "CUDA runtime"}


def _tool() -> ModuleType:
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    spec = importlib.util.spec_from_file_location("build_sources", ROOT / "tools" / "build_sources.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_sources"] = module
    spec.loader.exec_module(module)
    return module


def _example(printed: str) -> str:
    values = {"gcc_max": "12", "msvc_min": "2017", "msvc_max": "2022", "signal": "9",
              "tool": "cicc", "program": "cc1plus", "version": "GLIBC_2.32",
              "package": "`flash-attn@2.7.4.post1`", "dependency": "`torch`",
              "object": "/env/lib/python3.10/site-packages/flash_attn_2_cuda.so",
              "symbol": "_ZN3c104cuda9SetDeviceEi"}
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), "x"), printed)


def test_every_recorded_message_at_every_release_is_catalogued() -> None:
    bs = _tool()
    recorded = bs.load(RECORDED)
    assert {"pip", "uv", "ninja", "nvcc", "gcc", "cudahost", "ld"} <= set(recorded)
    assert len(recorded["pip"]["points"]) >= 140 and len(recorded["uv"]["points"]) >= 300
    for prefix, data in recorded.items():
        points = [str(p) for p in data["points"]]
        mine = {e.printed: e for e in BUILD if e.source == prefix}
        for _, _, printed, _, runs in data["rows"]:
            entry = mine[printed]
            for point in bs.ex.tags_in_runs(points, runs):
                assert points.index(entry.first) <= points.index(point) <= points.index(entry.last)


def test_host_compiler_limits_by_cuda_release() -> None:
    """The gcc each CUDA accepts, read from crt/host_config.h of NVIDIA's wheels."""
    [gnu] = [e for e in BUILD if e.source == "cudahost" and "GNU" in e.printed]
    limits = {last.split("==")[1]: value for _, last, value in gnu.limits}
    assert limits == {"11.8.89": "11", "12.1.105": "12", "12.6.85": "13", "12.9.86": "14",
                      "13.2.86": "15", "13.5.37": "16"}


def test_a_header_and_a_repository_are_read_as_recorded(tmp_path: Path) -> None:
    """A real header file and a real git repository with two tags."""
    bs = _tool()
    header = tmp_path / "host_config.h"
    header.write_text("#if __GNUC__ > 99\n#error -- unsupported GNU version! gcc versions later "
                      "than 99 are not supported! The nvcc flag ...\n#endif\n", encoding="utf-8")
    rows = bs.binary_rows(bs._lines(str(header)), "include/crt/host_config.h")
    assert rows == [("cudahost", ("include/crt/host_config.h", 2, "unsupported GNU version! gcc "
                                  "versions later than {gcc_max} are not supported!", "99"))]
    repo = tmp_path / "ninja"
    (repo / "src").mkdir(parents=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for tag, pad in (("v1.0.0", ""), ("v1.1.0", "\n\n")):
        (repo / "src" / "ninja.cc").write_text(pad + 'printf("ninja: build stopped: %s.\\n");\n')
        (repo / "src" / "build.cc").write_text('*err = "subcommand failed";\n')
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-qm", tag], check=True)
        subprocess.run([*git, "tag", tag], check=True)
    ninja = next(r for r in bs.REPOS if r.name == "ninja")
    read = bs.read_repo(ninja, str(repo))
    assert read["points"] == ["v1.0.0", "v1.1.0"]
    assert [(r[1], r[2]) for r in read["rows"]] == [(1, "build stopped: subcommand failed."),
                                                    (3, "build stopped: subcommand failed.")]


@pytest.mark.parametrize("entry", BUILD, ids=[e.id for e in BUILD])
def test_each_printed_form_gets_its_category_and_a_remedy_naming_the_fix(
        entry: Entry, matrix: Matrix) -> None:
    text = ("Building wheel for flash-attn (setup.py) ... error\n"
            f"  {_example(entry.printed)}\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == entry.category, top.message
    remedies = " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)
    wanted = FIX.get(entry.category) or ("gcc-12" if "gcc_max" in entry.printed else
                                         "Visual Studio 2022" if "msvc" in entry.printed else
                                         "MAX_JOBS=")
    assert wanted in remedies, remedies
    assert top.evidence["quoted"]


def test_gcc_gate_corroborates_the_hand_mechanism(matrix: Matrix) -> None:
    text = ("gcc version 13.2.0\nnvcc 12.1\n/usr/local/cuda/include/crt/host_config.h(132): "
            "error: #error -- "
            "unsupported GNU version! gcc versions later than 12 are not supported! The nvcc "
            "flag '-allow-unsupported-compiler' can be used to override this version check\n")
    found = triage(text, matrix).diagnosis
    top = found[0]
    assert top.subject == "compiler" and top.category == Category.BUILD_TOOLCHAIN
    assert str(top.evidence["catalogued"]).startswith("cudahost-")
    assert [d for d in found if d.subject == "catalog"] == []  # folded, not a second cause
    commands = [c for r in top.remedies for c in r.commands]
    assert commands[0] == "export CC=gcc-12 CXX=g++-12"  # the hand mechanism's first remedy
    assert "export NVCC_APPEND_FLAGS=-allow-unsupported-compiler" in commands
    # the stated gcc 13 is accepted from CUDA 12.4 on (host_config.h of the 12.4.131 wheel)
    assert any("keep gcc 13: CUDA 12.4 is the oldest" in r.summary for r in top.remedies)


def _triage_child(report: str, tmp_path: Path) -> Dict[str, object]:
    path = tmp_path / "report.txt"
    path.write_text(report, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "fadoctor", "triage", str(path), "--format",
                           "json"], capture_output=True, timeout=300, check=False)
    assert done.returncode == 1, done.stderr
    loaded: Dict[str, object] = json.loads(done.stdout)
    return loaded


# Written for this test (not copied from an issue thread): a uv install of flash-attn whose
# isolated build lacks torch.
UV_REPORT = """$ uv pip install flash-attn==2.7.4.post1
Resolved 24 packages in 1.02s
  x Failed to build `flash-attn==2.7.4.post1`
  |-> The build backend returned an error
  `-> Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)
      [stderr]
      ModuleNotFoundError: No module named 'torch'

      hint: This error likely indicates that `flash-attn@2.7.4.post1` depends on `torch`, but \
doesn't declare it as a build dependency. If `flash-attn` is a first-party package, consider \
adding `torch` to its `build-system.requires`.
"""
# Written for this test: a source build on a 32 GB machine whose cicc the kernel killed.
NVCC_REPORT = """torch 2.7.1+cu126, nvcc 12.6, 32 GB of RAM, building flash-attn 2.8.3 from source
      [47/73] nvcc -c csrc/flash_attn/src/flash_bwd_hdim256_bf16_sm80.cu
      nvcc error   : 'cicc' died due to signal 9 (Kill signal)
      ninja: build stopped: subcommand failed.
      error: subprocess-exited-with-error
"""


def test_uv_report_end_to_end(tmp_path: Path) -> None:
    top = _triage_child(UV_REPORT, tmp_path)["diagnosis"][0]  # type: ignore[index]
    assert top["category"] == "build_isolation"
    text = json.dumps(top["remedies"])
    assert "flash-attn==2.7.4.post1 --no-build-isolation" in text
    assert 'no-build-isolation-package = [\\"flash-attn\\"]' in text
    assert '`no-build-isolation = [\\"flash-attn\\"]` under [pypi-options]' in text
    assert top["evidence"]["catalogued"].startswith("uv-")


def test_killed_cicc_end_to_end(tmp_path: Path) -> None:
    found: List[Dict[str, object]] = _triage_child(NVCC_REPORT, tmp_path)["diagnosis"]  # type: ignore[assignment]
    top = found[0]
    assert top["category"] == "build_resources"
    assert top["evidence"]["catalog"] == "nvcc-001"  # type: ignore[index]
    assert "MAX_JOBS=3 " in json.dumps(top["remedies"])  # 32 GB at about 10 GB a job


def test_pip_step_beside_another_build_cause_is_no_second_cause(matrix: Matrix) -> None:
    """pip's failed step joins the named cause setup.py printed (here CUDA_HOME), without the
    isolation remedy, which would not fix it."""
    text = ("  Getting requirements to build wheel ... error\n"
            "  \u00d7 Getting requirements to build wheel did not run successfully.\n"
            "      OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA "
            "install root.\n")
    found = triage(text, matrix).diagnosis
    assert [d.subject for d in found] == ["nvcc_missing"]
    assert str(found[0].evidence["catalogued"]).startswith("pip-")
    assert not any("--no-build-isolation" in c for r in found[0].remedies for c in r.commands)


def test_ninja_stop_joins_the_catalogued_cause_above_it(matrix: Matrix) -> None:
    text = ("building flash-attn 2.8.3 from source\nptxas fatal   : Memory allocation failure\n"
            "ninja: build stopped: subcommand failed.\n")
    found = triage(text, matrix).diagnosis
    assert [(d.category, d.evidence["catalog"]) for d in found] == [
        (Category.BUILD_RESOURCES, "ptxas-001")]
    assert len(found[0].evidence["quoted"]) == 2  # ptxas's line and ninja's
    assert any(c.startswith("MAX_JOBS=") for r in found[0].remedies for c in r.commands)
