"""Issue 18, tried as a new user would: each behaviour that misled, as the real CLI shows it now."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Dict, Optional

import pytest
from packaging.version import Version
from tests.helpers.broken import requires_torch

from fadoctor.fix.solver import FA3_TAG, Constraints, solve
from fadoctor.install.machine import Machine, WhatIf, apply
from fadoctor.install.wheels import build_arch
from fadoctor.matrix import load_matrix
from fadoctor.render.options import RenderOptions
from fadoctor.render.text import render_text

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "tests" / "fixtures" / "facts"
MATRIX = load_matrix()


def run(*args: str, env: Optional[Dict[str, str]] = None, stdin: str = ""
        ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    return subprocess.run([sys.executable, "-m", "fadoctor", *args], capture_output=True,
                          text=True, env={**base, **(env or {})}, input=stdin, timeout=300,
                          check=False)


# 1 -------------------------------------------------------------------------------------------
@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs fadoctor in a virtualenv")
def test_check_says_it_examined_its_own_environment() -> None:
    """On a terminal (stderr a pty here): one line that says which environment was examined."""
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    master, slave = os.openpty()
    try:
        subprocess.run([sys.executable, "-m", "fadoctor", "snapshot", "--static", "-o",
                        os.devnull], stderr=slave, env={**base, "TERM": "xterm"}, timeout=300,
                       check=True)
        os.close(slave)
        told = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the pty's other end is closed: all is read
                break
            if not chunk:
                break
            told += chunk
    finally:
        os.close(master)
    text = " ".join(told.decode().split())
    assert "examining the environment fadoctor runs from" in text
    assert "--python PATH" in text and "activate" in text
    assert "examining" not in run("snapshot", "--static", "-o", os.devnull).stderr  # a pipe


def test_torch_missing_in_its_own_environment_points_at_the_training_one(tmp_path: Path) -> None:
    from fadoctor.checks.system import check_torch_import
    from fadoctor.facts.files import loads

    env = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    done = run("snapshot", "--python", str(env), "-o", "-")
    facts = loads(done.stdout, "snapshot")
    chosen = facts.model_copy(update={"target": facts.target.model_copy(
        update={"chosen_by": "current"})})
    [finding] = check_torch_import(chosen, MATRIX)  # type: ignore[misc]
    assert "environment fadoctor runs from" in finding.message
    assert "--python PATH" in finding.remedies[0].summary
    assert not any("pip install torch" in c for r in finding.remedies for c in r.commands)
    [named] = check_torch_import(facts, MATRIX)  # type: ignore[misc]
    assert named.message == "torch is not installed in the target environment"


# 2 -------------------------------------------------------------------------------------------
def _wheel_without_extension(folder: Path) -> Path:
    """flash-attn 2.8.3 as FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE leaves it: Python files that
    import flash_attn_2_cuda, and no flash_attn_2_cuda*.so."""
    files = {
        "flash_attn/__init__.py": '__version__ = "2.8.3"\n'
                                  "from flash_attn.flash_attn_interface import flash_attn_func\n",
        "flash_attn/flash_attn_interface.py": "import flash_attn_2_cuda as flash_attn_gpu\n\n"
                                              "def flash_attn_func(*args):\n"
                                              "    return flash_attn_gpu.fwd(*args)\n",
        "flash_attn-2.8.3.dist-info/METADATA": "Metadata-Version: 2.1\nName: flash_attn\n"
                                               "Version: 2.8.3\nRequires-Dist: torch\n",
        "flash_attn-2.8.3.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
                                            "Root-Is-Purelib: false\nTag: py3-none-any\n",
        "flash_attn-2.8.3.dist-info/top_level.txt": "flash_attn\n",
    }

    def digest(data: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
            b"=").decode()

    record = "".join(f"{p},{digest(c.encode())},{len(c.encode())}\n" for p, c in files.items())
    wheel = folder / "flash_attn-2.8.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr("flash_attn-2.8.3.dist-info/RECORD",
                         record + "flash_attn-2.8.3.dist-info/RECORD,,\n")
    return wheel


@requires_torch
def test_flash_attn_without_its_extension_is_read_from_its_record(tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(site), str(_wheel_without_extension(tmp_path))], check=True)
    assert not list(site.rglob("flash_attn_2_cuda*"))  # pip's own RECORD, no extension
    done = run("check", "--only", "FAD111", "-f", "json", env={"PYTHONPATH": str(site)})
    [check] = json.loads(done.stdout)["checks"]
    [finding] = check["findings"]
    assert finding["category"] == "not_installed" and "RECORD lists no" in finding["message"]
    commands = [c for r in finding["remedies"] for c in r["commands"]]
    assert not any("--force-reinstall" in c for c in commands)  # the build that fails again
    assert any("-m pip install torch==" in c and "+cu" in c for c in commands)  # CPU torch


def test_a_record_listing_the_extension_is_a_complete_install() -> None:
    from fadoctor.checks.incomplete import missing_extension
    from fadoctor.facts.files import loads

    facts = loads((FACTS / "t4-fa2-installed.json").read_text(), "fixture")
    [fa] = [f for f in facts.flash_attention if f.installed]
    packages = facts.packages.data
    assert packages is not None

    def with_record(files: list[str]) -> Optional[list[str]]:
        dists = [d.model_copy(update={"extensions": files}) if d.name == fa.distribution else d
                 for d in packages.distributions]
        changed = facts.model_copy(update={"packages": facts.packages.model_copy(update={
            "data": packages.model_copy(update={"distributions": dists})})})
        return missing_extension(fa, changed)

    assert with_record(["flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"]) is None
    assert with_record([]) == ["flash_attn_2_cuda", "flash_attn_cuda"]
    assert missing_extension(fa, facts) is None  # no RECORD read: unknown, nothing claimed


def test_an_incomplete_install_on_a_gpu_the_family_cannot_serve_offers_no_build() -> None:
    # flash-attn 2.8.3 without its extension on a T4 (sm_75): no 2.x build runs there (FAD112),
    # so the remedy is the GPU's (SDPA, FlashAttention 1.x), never a wheel or a build of 2.8.3.
    from fadoctor.checks.flash import check_import
    from fadoctor.facts.files import loads
    from fadoctor.facts.model import Failure, FailureKind, Probe

    facts = loads((FACTS / "t4-fa2-installed.json").read_text(), "fixture")
    packages = facts.packages.data
    assert packages is not None
    failed = Probe.failed(Failure(kind=FailureKind.IMPORT_ERROR, exception_type="ImportError",
                                  reason="No module named 'flash_attn_2_cuda'"))
    families = [f.model_copy(update={"imported": failed}) if f.installed else f
                for f in facts.flash_attention]
    dists = [d.model_copy(update={"extensions": []}) if d.name == "flash-attn" else d
             for d in packages.distributions]
    facts = facts.model_copy(update={"flash_attention": families, "packages": facts.packages
                                     .model_copy(update={"data": packages.model_copy(
                                         update={"distributions": dists})})})
    outcome = check_import(facts, MATRIX)
    assert isinstance(outcome, list)
    [finding] = [f for f in outcome if f.category.value == "not_installed"]
    assert "RECORD lists no" in finding.message and "sm_75" in finding.message, finding.message
    commands = " ".join(c for r in finding.remedies for c in r.commands)
    summaries = " ".join(r.summary for r in finding.remedies)
    assert "2.8.3" not in commands and "--no-build-isolation" not in commands, commands
    assert "flash-attn==" not in commands and "fix --keep-torch" not in commands, commands
    assert "build flash-attn" not in summaries and "prebuilt wheel" not in summaries, summaries
    assert "scaled_dot_product_attention" in summaries, summaries


# 3, 4, 13 ----------------------------------------------------------------------------------------
def test_only_with_model_reports_only_the_check_named() -> None:
    done = run("check", "--facts", str(FACTS / "t4-fa2-installed.json"), "--model",
               "llama-3.1-8b", "--only", "FAD150", "-f", "json")
    assert [c["id"] for c in json.loads(done.stdout)["checks"]] == ["FAD150"]


@requires_torch
def test_model_attention_on_a_cpu_torch_is_unproven() -> None:
    done = run("check", "--model", "llama-3.1-8b", "--only", "FAD150", "-f", "json")
    [check] = json.loads(done.stdout)["checks"]
    assert "unproven here" in check["findings"][0]["message"]
    assert "works here" not in check["findings"][0]["message"]


@requires_torch
def test_model_on_a_cpu_torch_says_sdpa_is_unproven_as_check_model_does() -> None:
    done = run("model", "llama-3.1-8b", "-f", "json")  # this interpreter: a CPU-only torch
    why = json.loads(done.stdout)["recommendation"]["why"]
    assert why.startswith("unproven here (torch ") and "is CPU-only): on paper " in why, why
    assert "needs here" not in why, why


def test_verbose_names_the_distributions() -> None:
    done = run("check", "--facts", str(FACTS / "t4-fa2-installed.json"), "-v", "--only",
               "FAD107")
    assert 'distributions: ["torch 2.8.0+cu128", "flash-attn 2.8.3"]' in done.stdout


# 5 -------------------------------------------------------------------------------------------
def test_model_advice_pins_nothing_open_and_knows_gqa() -> None:
    done = run("model", "llama-3.1-8b", "--no-detect", "-f", "json")
    advice = json.loads(done.stdout)
    assert not any(">=" in c for c in advice["recommendation"]["commands"])
    assert not any("not in the matrix" in p or "not supported" in p
                   for row in advice["support"] for p in row["problems"])


# 6, 7, 9 ------------------------------------------------------------------------------------------
def test_a_what_if_plan_marks_what_it_assumes() -> None:
    out = run("fix", "--no-detect", "--gpu-cc", "8.0").stdout
    assert "Python unknown, glibc unknown" in out and "unknown driver" in out
    assert "ASSUMED: Python 3.13 (cp313)" in out and "ASSUMED: glibc >= 2.32" in out
    # A source build is offered where no wheel fits (torch 2.11), below torch's C++20 headers.
    build = run("fix", "--no-detect", "--gpu-cc", "8.0", "--torch", "2.11.0+cu130").stdout
    assert "MAX_JOBS=4 is assumed" in build
    for fmt in ("pip", "uv", "requirements"):  # a script or file keeps the marks, as comments
        script = run("fix", "--no-detect", "--gpu-cc", "8.0", "-f", fmt).stdout
        assert "# ASSUMED: Python 3.13 (cp313)" in script and "# ASSUMED: glibc >= 2.32" in script
    given = run("fix", "--no-detect", "--gpu-cc", "8.0", "--python", "3.11", "--glibc",
                "2.35").stdout
    assert "ASSUMED: Python" not in given and "ASSUMED: glibc" not in given


@requires_torch
def test_fix_without_a_gpu_says_so_and_marks_the_downgrade() -> None:
    for fmt in ("text", "pip", "requirements"):
        out = run("fix", "-f", fmt).stdout
        assert "this machine has no NVIDIA GPU" in out and "--gpu-cc CC" in out
        assert "DOWNGRADES torch 2.13.0+cpu" in out


def test_v100_gives_the_decisive_reason_first_and_refuses_fa2() -> None:
    out = run("fix", "--no-detect", "--gpu-cc", "7.0", "--python", "3.11").stdout
    rejected = out.split("Rejected:\n", 1)[1].splitlines()
    assert "FlashAttention-2 needs 8.0+" in rejected[0]
    done = run("fix", "--no-detect", "--gpu-cc", "7.0", "--family", "fa2")
    assert done.returncode == 1 and "no FlashAttention-2 plan" in done.stderr
    assert "8.0+" in done.stderr and done.stdout == ""


# 8 -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("cc", "arch"), [("8.0", "80"), ("8.6", "80"), ("8.9", "80"),
                                          ("9.0", "90"), ("10.0", "100"), ("12.0", "120")])
def test_the_arch_env_names_a_value_setup_py_acts_on(cc: str, arch: str) -> None:
    release = max((r for r in MATRIX.flash_attn_releases if r.arch_env),
                  key=lambda r: r.version)
    assert build_arch(release, Version(cc)) == arch
    assert f"sm_{arch}" in release.build_archs  # a -gencode line of its setup.py
    plan = solve(apply(Machine(), WhatIf(gpu_cc=cc, python="3.12", torch="2.11.0+cu130")),
                 Constraints(torch="2.11.0+cu130"), MATRIX)
    builds = [c for p in (plan.best, *plan.alternatives) if p.kind == "build"
              for c in p.commands if "FLASH_ATTN_CUDA_ARCHS" in c]
    if arch == "120":  # nvcc segfaults building it for RTX 50xx (flash-attention#2361): no build
        assert builds == []
        return
    assert builds and all(f"FLASH_ATTN_CUDA_ARCHS={arch} " in c for c in builds)


def test_max_jobs_is_the_planned_machines_and_fa3_comes_from_a_tag() -> None:
    here = Machine(memory_gib=24.0, cpus=2, detected=True)
    assert apply(here, WhatIf(python="3.12")).build_jobs == 2  # this machine: its memory
    other = apply(here, WhatIf(gpu_cc="9.0", python="3.12"))
    assert other.memory_gib is None and other.cpus is None  # another machine: not this one's
    plan = solve(other, Constraints(), MATRIX)
    fa3 = next(p for p in (plan.best, *plan.alternatives)
               if p.family and p.family.value == "fa3" and p.kind == "build")
    assert any(f"--branch {FA3_TAG} " in c for c in fa3.commands)
    assert any(c.endswith("pip install --no-build-isolation .") for c in fa3.commands)
    assert not any("setup.py install" in c for c in fa3.commands)


# 10 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("columns", ["60", "80", "120"])
def test_help_is_never_cut_and_shows_no_type(columns: str) -> None:
    for command in (["check"], ["fix"], ["bench"], ["model"], ["matrix", "show"]):
        out = run(*command, "--help", env={"COLUMNS": columns, "NO_COLOR": "1"}).stdout
        assert "…" not in out and "<bool>" not in out, (command, out)
    check = run("check", "-h", env={"COLUMNS": "120", "NO_COLOR": "1"}).stdout
    assert "KEY=VALUE,..." in check and "FILE" not in check


@pytest.mark.parametrize("width", [60, 80, 120])
def test_wrapped_text_keeps_to_the_width_with_a_hanging_indent(width: int) -> None:
    from fadoctor.evaluate import evaluate
    from fadoctor.facts.files import loads

    facts = loads((FACTS / "fa853-cxx11abi-true-wheel-on-pip-torch.json").read_text(), "fixture")
    report = evaluate(facts, MATRIX)
    whole = render_text(report, RenderOptions(width=width, verbose=True)).splitlines()
    lines = render_text(report, RenderOptions(width=width, verbose=True, wrap=True)).splitlines()
    commands = {f"        {c}" for r in report.checks for f in r.findings for m in f.remedies
                for c in [*m.commands, *(m.code or "").splitlines()]}
    for line in lines:  # a command stays whole; else only a word wider than the line goes over
        assert len(line) <= width or line in commands or any(
            len(word) > width - 40 for word in line.split()), line
    assert len(lines) > len(whole) and max(map(len, whole)) > width  # it did wrap
    # continuation lines hang under the text they continue
    assert any(ln.startswith(" " * 33) and not ln.startswith(" " * 34) for ln in lines) or \
        width - 33 < 40


@pytest.mark.parametrize("columns", [60, 80])
def test_model_tables_fit_columns(columns: int) -> None:
    out = run("model", "gemma-2-9b", "--no-detect", env={"COLUMNS": str(columns)}).stdout
    assert max(len(line) for line in out.splitlines()) <= columns


# 11, 12 --------------------------------------------------------------------------------------
def test_triage_of_nothing_is_exit_2() -> None:
    done = run("triage", "-", stdin="  \n")
    assert done.returncode == 2 and "the input is empty" in done.stderr


@requires_torch
def test_bench_on_a_cpu_torch_says_so_at_once() -> None:
    started = time.monotonic()
    done = run("bench")
    assert done.returncode == 1 and "no CUDA GPU" in done.stderr and "CPU-only" in done.stderr
    assert done.stdout == "" and time.monotonic() - started < 10
