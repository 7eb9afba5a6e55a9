"""`collect` on real environments: this interpreter's real torch, real broken flash-attn installs
(ELF extensions built here with gcc), a real fresh virtualenv, and how the target is chosen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from tests.helpers.broken import (
    ATEN_PAD_ENUM,
    CUDART_11,
    HAS_GCC,
    SEGFAULT,
    environ_with_path,
    extension_needing_symbol,
    fake_flash_attn,
    fake_module_dist,
    library_loads,
    opposite_abi_symbol,
    requires_gcc,
    requires_torch,
    target_ext_suffix,
    write_distribution,
)
from tests.helpers.spy import count_worker_starts, stages_of

from fadoctor.collect.run import collect
from fadoctor.collect.target import CollectOptions, resolve_target
from fadoctor.errors import UsageError
from fadoctor.evaluate import evaluate
from fadoctor.facts.model import Facts, FailureKind, Family
from fadoctor.in_target.registry import names
from fadoctor.matrix import load_matrix
from fadoctor.report import CheckResult, Report, Status

STAGES = tuple(names())

OTHER_FAMILIES = {Family.FA2: (Family.FA3, Family.FA4, Family.VLLM_FA),
                  Family.FA3: (Family.FA2, Family.FA4, Family.VLLM_FA)}


def check(report: Report, check_id: str) -> CheckResult:
    return next(c for c in report.checks if c.id == check_id)


def assert_carried_on(facts: Facts, broken: Family) -> None:
    """The stages around the broken one were all reported."""
    assert facts.host.ok and facts.packages.ok and facts.torch.ok
    assert facts.torch.data is not None and facts.torch.data.sdpa  # the sdpa stage ran too
    assert [fa.family for fa in facts.flash_attention] == list(Family)
    for family in OTHER_FAMILIES[broken]:
        fa = facts.family(family)
        assert fa is not None and fa.installed is False
    assert set(STAGES) <= set(facts.timings)


# -- choosing the target ------------------------------------------------------------------------


def make_env(root: Path, *, python: bool = True) -> Path:
    """A folder laid out like a venv, its bin/python a link to this interpreter."""
    (root / "bin").mkdir(parents=True)
    if python:
        (root / "bin" / "python").symlink_to(sys.executable)
    return root


def test_python_option_wins_over_the_active_environments(tmp_path: Path) -> None:
    venv = make_env(tmp_path / "venv")
    chosen = resolve_target(sys.executable, {"VIRTUAL_ENV": str(venv), "CONDA_PREFIX": "/x"})
    assert (chosen.python, chosen.chosen_by) == (sys.executable, "--python")


def test_python_option_accepts_an_environment_folder(tmp_path: Path) -> None:
    env = make_env(tmp_path / "env")
    chosen = resolve_target(str(env), {})
    assert (chosen.python, chosen.chosen_by) == (str(env / "bin" / "python"), "--python")


def test_virtual_env_then_conda_prefix_then_the_current_interpreter(tmp_path: Path) -> None:
    venv, conda = make_env(tmp_path / "venv"), make_env(tmp_path / "conda")
    both = {"VIRTUAL_ENV": str(venv), "CONDA_PREFIX": str(conda)}
    assert resolve_target(None, both).python == str(venv / "bin" / "python")
    assert resolve_target(None, both).chosen_by == "VIRTUAL_ENV"
    only_conda = resolve_target(None, {"CONDA_PREFIX": str(conda)})
    assert (only_conda.python, only_conda.chosen_by) == (str(conda / "bin" / "python"), "CONDA_PREFIX")
    # A VIRTUAL_ENV without an interpreter (deleted, half-built) is passed over.
    empty = make_env(tmp_path / "empty", python=False)
    passed_over = resolve_target(None, {"VIRTUAL_ENV": str(empty), "CONDA_PREFIX": str(conda)})
    assert passed_over.chosen_by == "CONDA_PREFIX"
    current = resolve_target(None, {})
    assert (current.python, current.chosen_by) == (sys.executable, "current")


@pytest.mark.parametrize("case", ["missing", "folder-without-python", "not-executable"])
def test_a_bad_python_option_is_a_usage_error(tmp_path: Path, case: str) -> None:
    path = {"missing": tmp_path / "nonexistent" / "python",
            "folder-without-python": make_env(tmp_path / "env", python=False),
            "not-executable": tmp_path / "python"}[case]
    if case == "not-executable":
        path.write_text("#!/bin/sh\n")
    with pytest.raises(UsageError, match=r"^--python "):
        resolve_target(str(path), {})


def test_the_active_virtualenv_is_examined_not_fadoctors_own(tmp_path: Path) -> None:
    venv = tmp_path / "train-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CONDA_PREFIX")}
    environ["VIRTUAL_ENV"] = str(venv)
    facts = collect(CollectOptions(environ=environ))

    assert facts.target.chosen_by == "VIRTUAL_ENV"
    assert facts.host.data is not None
    assert Path(facts.host.data.prefix).resolve() == venv.resolve()
    # That environment has no torch, though the one running fadoctor has.
    assert facts.torch.failure is not None
    assert facts.torch.failure.exception_type == "ModuleNotFoundError"
    assert "torch" in facts.torch.failure.reason
    assert check(evaluate(facts, load_matrix()), "FAD102").findings[0].category == "not_installed"
    assert not any(fa.installed for fa in facts.flash_attention)


# -- the happy path: this interpreter and its real torch -------------------------------------------


@pytest.fixture(scope="module")
def happy() -> Tuple[Facts, List[List[str]]]:
    with pytest.MonkeyPatch.context() as mp:
        starts = count_worker_starts(mp)
        facts = collect(CollectOptions(python=sys.executable, environ=dict(os.environ)))
    return facts, starts


@requires_torch
@pytest.mark.slow
def test_one_worker_gathers_everything(happy: Tuple[Facts, List[List[str]]]) -> None:
    facts, starts = happy
    # The main lane, and transformers' own (fadoctor.in_target.registry).
    assert sorted(stages_of(s) for s in starts) == sorted(
        [[s for s in STAGES if s != "transformers"], ["transformers"]])
    assert facts.target.python == sys.executable
    assert facts.host.ok and facts.packages.ok and facts.torch.ok and facts.driver.ok
    assert facts.timings["total"] >= max(facts.timings[s] for s in STAGES)
    assert Facts.model_validate_json(facts.model_dump_json()) == facts


@requires_torch
@pytest.mark.slow
def test_a_stage_in_another_lane_runs_in_a_second_worker(
        monkeypatch: pytest.MonkeyPatch, happy: Tuple[Facts, List[List[str]]]) -> None:
    from fadoctor.in_target import registry

    # The registry's lanes are what the collector starts: put sdpa in a lane of its own.
    monkeypatch.setitem(registry.BY_NAME, "sdpa", registry.BY_NAME["sdpa"]._replace(lane="other"))
    starts = count_worker_starts(monkeypatch)
    facts = collect(CollectOptions(python=sys.executable, environ=dict(os.environ)))
    assert sorted(stages_of(s) for s in starts) == sorted(
        [[s for s in STAGES if s not in ("sdpa", "transformers")], ["sdpa"], ["transformers"]])
    assert [t for t in facts.timings if t in STAGES] == list(STAGES)  # in registry order
    alone, together = facts.torch.data, happy[0].torch.data
    assert alone is not None and together is not None and alone.sdpa == together.sdpa


@requires_torch
@pytest.mark.slow
def test_torch_facts_are_those_of_the_real_torch(happy: Tuple[Facts, List[List[str]]]) -> None:
    torch = pytest.importorskip("torch")
    data = happy[0].torch.data
    assert data is not None
    assert data.version == torch.__version__
    assert data.cuda == torch.version.cuda
    assert data.cxx11_abi is bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    assert data.arch_list == torch.cuda.get_arch_list()
    assert data.cuda_available is torch.cuda.is_available()
    assert Path(data.file or "") == Path(torch.__file__)
    packages = happy[0].packages.data
    assert packages is not None and packages.get("torch") is not None
    if torch.version.cuda is None:  # the CPU build: nothing CUDA to report
        assert data.arch_list == [] and data.device_count == 0 and not data.cuda_available


@requires_torch
@pytest.mark.slow
def test_sdpa_math_is_usable_and_the_gpu_backends_say_why_not(
    happy: Tuple[Facts, List[List[str]]],
) -> None:
    data = happy[0].torch.data
    assert data is not None
    backends = {b.name: b for b in data.sdpa}
    assert set(backends) == {"flash", "efficient", "cudnn", "math"}
    assert backends["math"].enabled is True and backends["math"].usable is True
    if not data.cuda_available:
        for name in ("flash", "efficient", "cudnn"):
            assert backends[name].usable is None
            assert backends[name].reasons == ["CUDA is not available to torch"]


# -- broken flash-attn 2 installs: compiled extensions the loader refuses ----------------------------


@pytest.fixture(scope="module")
def torch_cxx11_abi() -> bool:
    torch = pytest.importorskip("torch")
    return bool(torch._C._GLIBCXX_USE_CXX11_ABI)


BROKEN = {
    # case: (what the extension lacks, the category FAD111 must give)
    "other-cxx11-abi": ("symbol", "cxx11_abi_mismatch"),
    "other-torch": ("symbol", "torch_version_mismatch"),
    # Beside the CPU torch these tests run, a CUDA library's absence is a CPU-only torch's.
    "cuda-11-runtime": ("library", "torch_cpu_only"),
}


@pytest.fixture(scope="module", params=sorted(BROKEN))
def broken_fa2(request: Any, tmp_path_factory: pytest.TempPathFactory, torch_cxx11_abi: bool
               ) -> Tuple[str, str, Facts]:
    case: str = request.param
    if not HAS_GCC:
        pytest.skip("needs gcc to build ELF files")
    site = tmp_path_factory.mktemp(case)
    if case == "cuda-11-runtime":
        if library_loads(CUDART_11):
            pytest.skip(f"{CUDART_11} exists on this machine")
        fake_flash_attn(site, needed=CUDART_11)
        missing = CUDART_11
    else:
        missing = opposite_abi_symbol(torch_cxx11_abi) if case == "other-cxx11-abi" else ATEN_PAD_ENUM
        fake_flash_attn(site, symbol=missing)
    facts = collect(CollectOptions(python=sys.executable, environ=environ_with_path(site)))
    return case, missing, facts


@requires_torch
@requires_gcc
@pytest.mark.slow
def test_the_facts_record_the_loader_error(broken_fa2: Tuple[str, str, Facts]) -> None:
    case, missing, facts = broken_fa2
    fa2 = facts.family(Family.FA2)
    assert fa2 is not None
    assert (fa2.installed, fa2.distribution, fa2.version) == (True, "flash-attn", "2.6.3")
    assert fa2.imported is not None and fa2.imported.ok is False
    failure = fa2.imported.failure
    assert failure is not None
    assert failure.kind == FailureKind.IMPORT_ERROR
    assert failure.exception_type == "ImportError"
    if BROKEN[case][0] == "symbol":
        assert f"undefined symbol: {missing}" in failure.reason
        assert "flash_attn_2_cuda" in failure.reason
    else:
        assert f"{missing}: cannot open shared object file" in failure.reason
    assert "import flash_attn_2_cuda" in (failure.traceback_tail or "")
    assert_carried_on(facts, Family.FA2)


@requires_torch
@requires_gcc
@pytest.mark.slow
def test_flash_attn_import_check_names_the_root_cause(
    broken_fa2: Tuple[str, str, Facts], torch_cxx11_abi: bool
) -> None:
    case, missing, facts = broken_fa2
    report = evaluate(facts, load_matrix())
    result = check(report, "FAD111")
    assert result.status == Status.FAILED
    [finding] = result.findings
    assert finding.category == BROKEN[case][1]
    assert finding.subject == "fa2"
    assert finding.message.startswith("flash-attn 2.6.3 fails to import (import error)")
    evidence: Dict[str, Any] = finding.evidence
    assert evidence["torch_cxx11_abi"] is torch_cxx11_abi
    if case == "other-cxx11-abi":
        assert evidence["symbol"] == missing
        assert evidence["extension_cxx11_abi"] == str(int(not torch_cxx11_abi))
        assert any(f"cxx11abi{str(torch_cxx11_abi).upper()}" in r.summary for r in finding.remedies)
    elif case == "other-torch":
        assert evidence["symbol"] == missing
        assert "extension_cxx11_abi" not in evidence  # no std::string in the symbol
    else:
        assert (evidence["library"], evidence["cuda_major"]) == (CUDART_11, "11")
    assert any("pip install" in c for r in finding.remedies for c in r.commands)
    # The rest of the report is still there.
    assert check(report, "FAD102").status == Status.PASSED
    assert check(report, "FAD110").findings[0].message == "installed: flash-attn 2.6.3"


# -- a flash-attention import that kills the interpreter -----------------------------------------------


@requires_torch
@pytest.mark.slow
def test_a_segfault_at_import_becomes_a_finding(tmp_path: Path) -> None:
    fake_module_dist(tmp_path, "flash_attn_3", "3.0.0b1", "flash_attn_interface", SEGFAULT)
    facts = collect(CollectOptions(python=sys.executable, environ=environ_with_path(tmp_path)))

    fa3 = facts.family(Family.FA3)
    assert fa3 is not None
    assert (fa3.installed, fa3.distribution, fa3.version) == (True, "flash-attn-3", "3.0.0b1")
    assert fa3.imported is not None and fa3.imported.failure is not None
    failure = fa3.imported.failure
    assert (failure.kind, failure.signal, failure.exit_code) == (FailureKind.CRASH, "SIGSEGV", -11)
    assert "Segmentation fault" in (failure.stderr_tail or "")
    assert_carried_on(facts, Family.FA3)

    [finding] = check(evaluate(facts, load_matrix()), "FAD111").findings
    assert finding.severity == "error" and finding.subject == "fa3"
    assert "fails to import (the interpreter died from SIGSEGV)" in finding.message
    assert "flash_attn_interface.py" in finding.evidence["stderr_tail"]


# -- a package that imports while one of its compiled extensions does not ------------------------


@requires_torch
@requires_gcc
@pytest.mark.slow
def test_each_compiled_extension_present_is_imported_on_its_own(tmp_path: Path) -> None:
    # flash-attn 1.x: an empty flash_attn/__init__.py, so `import flash_attn` succeeds, beside a
    # csrc extension compiled against another torch (flash-attention#236).
    write_distribution(tmp_path, "flash-attn", "1.0.5", {"flash_attn/__init__.py": ""})
    extension_needing_symbol(tmp_path, "dropout_layer_norm", ATEN_PAD_ENUM, target_ext_suffix())
    facts = collect(CollectOptions(python=sys.executable, environ=environ_with_path(tmp_path)))

    fa2 = facts.family(Family.FA2)
    assert fa2 is not None and fa2.imported is not None and fa2.imported.data is not None
    [ext] = fa2.imported.data.extensions
    assert (ext.module, ext.ok, ext.exception_type) == ("dropout_layer_norm", False, "ImportError")
    assert ATEN_PAD_ENUM in (ext.error or "")

    findings = check(evaluate(facts, load_matrix()), "FAD111").findings
    [broken] = [f for f in findings if f.severity == "error"]
    assert broken.subject == "dropout_layer_norm"
    assert broken.category == "torch_version_mismatch"
    assert "flash-attn 1.0.5 imports, but its extension dropout_layer_norm does not" in broken.message
    commands = [c for r in broken.remedies for c in r.commands]
    assert any(c.startswith("cd flash-attention/csrc/layer_norm && ")  # the examined env's pip
               and c.endswith(" -m pip install . --no-build-isolation") for c in commands)


# -- a pure-Python family whose declared requirement is not installed ----------------------------


@requires_torch
@pytest.mark.slow
def test_a_missing_requirement_is_named_with_its_install_command(tmp_path: Path) -> None:
    # flash-attn-4 installed with --no-deps: its CuTe DSL (module cutlass) is absent.
    write_distribution(tmp_path, "flash-attn-4", "4.0.0b36",
                       {"flash_attn/__init__.py": "", "flash_attn/cute/__init__.py": "import cutlass\n"},
                       requires=["nvidia-cutlass-dsl>=4.8", "torch", 'pytest; extra == "dev"'])
    facts = collect(CollectOptions(python=sys.executable, environ=environ_with_path(tmp_path)))

    assert facts.packages.data is not None
    fa4_dist = facts.packages.data.get("flash-attn-4")
    assert fa4_dist is not None and fa4_dist.requires == [
        "nvidia-cutlass-dsl>=4.8", "torch", 'pytest; extra == "dev"']
    assert facts.packages.data.get("torch") is not None

    [finding] = check(evaluate(facts, load_matrix()), "FAD111").findings
    assert (finding.severity, finding.category, finding.subject) == ("error", "not_installed", "fa4")
    assert "a module it imports, cutlass, is missing" in finding.message
    assert "requires nvidia-cutlass-dsl>=4.8, which is not installed" in finding.message
    [install] = finding.remedies[0].commands  # into the examined interpreter
    assert install == f'{sys.executable} -m pip install "nvidia-cutlass-dsl>=4.8"'
    assert not any("from source" in r.summary for r in finding.remedies)
