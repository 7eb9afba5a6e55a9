"""`fadoctor matrix lint` and `fadoctor matrix show`, run through typer's CliRunner on the
sub-app; and the promise that importing the sub-app loads nothing heavy."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
from typer.testing import CliRunner

from fadoctor.cli.matrix import matrix_app
from fadoctor.matrix.show import _COLUMNS, SECTIONS

Raw = Dict[str, Any]
# stderr apart from stdout: the default from click 8.2, an option before.
RUNNER = CliRunner(**({"mix_stderr": False}
                      if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}))


def run(*args: str) -> Any:
    result = RUNNER.invoke(matrix_app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def show_json(*args: str) -> Dict[str, Any]:
    result = run("show", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    data: Dict[str, Any] = json.loads(result.stdout)
    return data


def versions(data: Dict[str, Any]) -> List[str]:
    return [r["version"] for r in data["flash_attn_releases"]]


# -- lint -------------------------------------------------------------------------------------

def test_lint_passes_the_shipped_matrix() -> None:
    result = run("lint")
    assert result.exit_code == 0
    assert result.stdout.strip().endswith("compat_matrix.yaml is valid")


def test_lint_names_every_broken_entry(fresh: Raw, release_in: Callable[[Raw, str], Raw],
                                       write_copy: Callable[[Raw], Path]) -> None:
    release_in(fresh, "2.8.3")["built_against"]["cu12torch2.6"] = "cu125"
    fresh["known_defects"][0]["versions"] = "==9.9"
    del fresh["gpus"][0]["cc"]
    path = write_copy(fresh)
    result = run("lint", "--matrix", str(path))
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert len(lines) == 1  # a schema error stops before the cross-entry invariants run
    assert lines[0] == f"matrix {path} is invalid: gpus.0.cc (name=GB10): Field required"
    assert "1 problem(s)" in result.stderr
    fresh["gpus"][0]["cc"] = "12.1"
    result = run("lint", "--matrix", str(write_copy(fresh)))
    assert result.exit_code == 2
    assert [line.split(": ", 2)[2][:20] for line in result.stdout.splitlines()] == [
        "flash-attn 2.8.3: cu", "known_defects 'glibc"]


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read matrix"), ("gpus: [unclosed\n", "is not valid YAML"),
])
def test_lint_of_an_unreadable_file(tmp_path: Path, content: Any, message: str) -> None:
    path = tmp_path / "m.yaml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = run("lint", "--matrix", str(path))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("fadoctor: error: ") and message in result.stderr


# -- show -------------------------------------------------------------------------------------

def test_show_one_release_lists_its_wheels_and_what_they_were_built_against() -> None:
    data = show_json("--flash-attn", "2.8.3")
    assert versions(data) == ["2.8.3"]
    asset = next(a for a in data["assets"] if a["local_version"] == "cu12torch2.6cxx11abiFALSE")
    assert (asset["built_against"], asset["label_cxx11_abi"], asset["real_cxx11_abi"]) == (
        "cu126", False, True)
    assert {d["id"] for d in data["known_defects"]} >= {"glibc-2.32-wheels",
                                                        "cxx11abi-false-wheels-built-with-abi1"}
    assert [t["minor"] for t in data["torch_releases"]] == ["2.4", "2.5", "2.6", "2.7", "2.8"]
    text = run("show", "--flash-attn", "2.8.3").stdout
    assert "cu12torch2.6cxx11abiFALSE" in text and "2.6.0+cu126" in text


def test_show_by_tag() -> None:
    assert versions(show_json("--flash-attn", "v2.0.0")) == ["2.0.0.post1"]  # the tag's version
    assert versions(show_json("--flash-attn", "2.0.0")) == ["2.0.0.post1"]


def test_show_a_series() -> None:
    assert versions(show_json("--flash-attn", "2.8")) == [
        "2.8.0", "2.8.0.post1", "2.8.0.post2", "2.8.1", "2.8.2", "2.8.3", "2.8.3.post1", "2.8.3.post2"]


def test_show_by_torch_lists_only_releases_that_built_it() -> None:
    data = show_json("--torch", "2.6.0")
    found = versions(data)
    assert "2.7.1" not in found and "2.7.1.post1" in found and "2.8.3.post1" in found
    assert [t["minor"] for t in data["torch_releases"]] == ["2.6"]
    assert {r["backend"] for r in data["sdpa_backends"]} == {"flash", "efficient", "cudnn"}


def test_show_by_gpu_name() -> None:
    data = show_json("--gpu", "NVIDIA H100 80GB HBM3")
    assert data["filters"]["compute_capability"] == "9.0"
    assert [g["name"] for g in data["gpus"]] == ["H100"]
    assert "2.2.4" not in versions(data) and "2.2.4.post1" in versions(data)
    assert {f["family"] for f in data["families"]} == {"fa2", "fa3", "fa4", "vllm_fa"}
    assert "no-sm90-kernels-in-2.2.4" not in {d["id"] for d in data["known_defects"]}


@pytest.mark.parametrize("gpu", ["12.0", "sm_120", "GeForce RTX 5090"])
def test_show_by_compute_capability(gpu: str) -> None:
    data = show_json("--gpu", gpu)
    assert versions(data)[0] == "2.8.0"  # the first wheels with sm_120
    assert {f["family"] for f in data["families"]} == {"fa2", "fa4", "vllm_fa"}
    assert data["torch_releases"][0]["minor"] == "2.7"  # cu128, the first with 12.0


def test_show_filters_combine() -> None:
    data = show_json("--flash-attn", "2.7.4.post1", "--torch", "2.6", "--gpu", "8.0")
    assert versions(data) == ["2.7.4.post1"]
    # the backward int32 overflow (#2260) has no machine condition: every release before post2
    assert [d["id"] for d in data["known_defects"] if d["stage"] != "install"] == [
        "bwd-dq-accum-int32-overflow"]


def test_show_everything() -> None:
    data = show_json()
    assert [k for k in data if k != "filters"] == [s for s in SECTIONS if s != "assets"]
    assert len(data["flash_attn_releases"]) == 79
    text = run("show").stdout
    assert all(f"{section} (" in text for section in SECTIONS if section != "assets")


def test_every_section_has_columns() -> None:
    assert set(_COLUMNS) == set(SECTIONS)


@pytest.mark.parametrize(("args", "message"), [
    (["--flash-attn", "2.9.9"], "no such flash-attn 2.x release"),
    (["--flash-attn", "two"], "not a version"),
    (["--gpu", "Voodoo 5"], "no GPU of that name"),
    (["--matrix", "/nowhere/m.yaml"], "cannot read matrix"),
])
def test_show_refuses_bad_input(args: List[str], message: str) -> None:
    result = run("show", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_importing_the_sub_app_loads_nothing_heavy() -> None:
    # The main CLI imports this module to register `fadoctor matrix`; --help must stay instant.
    code = "import fadoctor.cli.matrix, sys; print(sorted(m for m in sys.modules if m in " \
           "('yaml', 'rich', 'fadoctor.matrix.models', 'fadoctor.matrix.load', 'fadoctor.facts.model')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
