"""The stage registry and the target package: one declaration per stage, each one runnable, the
package standard-library-only Python 3.8 that can shadow nothing of the user's."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from fadoctor.facts import model as facts
from fadoctor.facts.model import Family
from fadoctor.in_target import registry, tables
from fadoctor.in_target.context import Context
from fadoctor.in_target.protocol import parse_args
from fadoctor.in_target.registry import BY_NAME, IMPORTS, STAGES, Stage
from fadoctor.in_target.worker import DISPATCH, runner

PACKAGE = Path(registry.__file__).resolve().parent
MODULES = sorted(PACKAGE.glob("*.py"))
SRC = PACKAGE.parent
needs_stdlib_names = pytest.mark.skipif(sys.version_info < (3, 10),
                                        reason="sys.stdlib_module_names is Python 3.10+")


def test_each_stage_is_declared_once_and_runs_through_the_dispatch_table() -> None:
    assert len(BY_NAME) == len(STAGES)
    assert {s.runs for s in STAGES} == set(DISPATCH)
    for stage in STAGES:
        assert stage.imports in IMPORTS, stage
        assert stage.timeout > 0, stage
        assert stage.label, stage


def test_each_stage_has_a_runner_whose_module_loads_when_a_stage_needs_it() -> None:
    for stage in STAGES:
        assert callable(runner(stage.runs)), stage


def test_a_worker_imports_only_the_modules_of_its_own_stages() -> None:
    import subprocess

    code = ("import sys, fadoctor.in_target.worker as w; w.runner('hf_attention'); "
            "print(sorted(m.rsplit('.', 1)[-1] for m in sys.modules "
            "if m.startswith('fadoctor.in_target.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=SRC.parent)
    loaded = set(ast.literal_eval(done.stdout))
    assert "hf_attention" in loaded
    assert not loaded & {"host", "packages", "files", "extscan", "collective", "family"}


def test_each_stage_fills_a_facts_model() -> None:
    for stage in STAGES:
        model = getattr(facts, stage.facts)
        assert issubclass(model, facts.Frozen), stage


def test_the_family_stages_are_the_families() -> None:
    family_stages = [s for s in STAGES if s.imports == "family" and s.group == "check"]
    assert [s.name for s in family_stages] == [f.value for f in Family] == list(tables.FAMILIES)
    assert all(dict(s.params) == {"family": s.name} for s in family_stages)


def test_static_is_what_imports_nothing() -> None:
    assert registry.names(static=True) == ["host", "packages", "files"]
    assert registry.names() == [s.name for s in STAGES if s.group == "check"]
    # transformers' decisions run in a lane of their own, beside the main lane's imports.
    assert registry.lanes(registry.names()) == {
        registry.MAIN_LANE: [n for n in registry.names() if n != "transformers"],
        "transformers": ["transformers"]}


def test_a_stage_in_another_lane_is_its_own_group(monkeypatch: pytest.MonkeyPatch) -> None:
    moved = BY_NAME["sdpa"]._replace(lane="kernels")
    monkeypatch.setitem(BY_NAME, "sdpa", moved)
    assert registry.lanes(["host", "torch", "sdpa", "fa2"]) == {
        "main": ["host", "torch", "fa2"], "kernels": ["sdpa"]}


def test_the_request_carries_stages_and_options() -> None:
    request = parse_args(["--fd", "7", "--stages", "host,,fa2", "--option", "kernels=full",
                          "--option", "shape=2x512", "--ignored"])
    assert request.fd == 7 and request.stages == ["host", "fa2"]
    assert request.options == {"kernels": "full", "shape": "2x512"}
    assert Context(request.options).options["kernels"] == "full"


def test_a_stage_is_a_plain_tuple_that_keeps_its_params() -> None:
    stage = Stage("x", "host", "nothing", 1.0, "x", "Host", params=(("a", "b"),))
    assert stage.static and dict(stage.params) == {"a": "b"} and stage.lane == registry.MAIN_LANE


def _imports(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@needs_stdlib_names
@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_target_modules_are_python_38_and_standard_library_only(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), feature_version=(3, 8))
    # torch is what the torch and sdpa stages examine, transformers (and the kernels library it
    # loads Hub kernels with) what the transformers stage asks: imported inside their run().
    outside = _imports(tree) - set(sys.stdlib_module_names) - {"torch", "transformers", "kernels"}
    assert outside == set(), f"{path.name} imports {outside}"


@needs_stdlib_names
def test_no_target_module_is_named_like_a_module_it_could_shadow() -> None:
    # Python puts the folder first on sys.path until __main__ takes it off: nothing in it may
    # be a standard-library name (or torch) that the first lines import.
    names = {p.stem for p in MODULES}
    assert not names & (set(sys.stdlib_module_names) | {"torch", "flash_attn", "fadoctor"})


def test_the_parent_modules_that_start_the_worker_load_without_pydantic() -> None:
    import subprocess

    code = ("import sys; import fadoctor.probes.runner, fadoctor.in_target.registry, "
            "fadoctor.collect.run; print('pydantic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=SRC.parent)
    assert done.stdout.strip() == "False"


def test_the_kernel_stages_are_their_own_groups_and_lanes() -> None:
    from fadoctor.in_target import attention

    smoke = registry.names(groups=("smoke",))
    assert smoke == [attention.stage_name("smoke", t) for t in attention.TARGETS]
    assert registry.lanes(registry.names(groups=("check", "smoke"))) == {
        "main": registry.names()[:-1], "transformers": ["transformers"], "sdpa": smoke[:4],
        "kernels": smoke[4:]}
    assert registry.names(groups=("compile",)) == [
        "compile_sdpa", "compile_fa2", "compile_fa3", "compile_fa4", "compile_vllm_fa"]
    bench = registry.names(groups=("bench",))
    assert set(registry.lanes(bench)) == {"bench"} and bench[-1] == "bench_hf"
    for name in smoke + bench:
        stage = BY_NAME[name]
        assert attention.parse(name) == (stage.runs, dict(stage.params)["target"])
    assert registry.names(static=True, groups=("smoke",)) == []


def test_the_collective_stage_runs_only_for_the_rank_agent_in_a_lane_of_its_own() -> None:
    assert "collective" not in registry.names()
    assert registry.names(groups=("distributed",)) == ["collective"]
    assert registry.lanes(registry.names(groups=("check", "distributed"))) == {
        "main": registry.names()[:-1], "transformers": ["transformers"],
        "collective": ["collective"]}
