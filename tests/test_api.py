"""fadoctor.check() and fadoctor.preflight(): the report `check --format json` prints, from real
child processes of the test interpreter (CPU torch 2.13.0), with nothing imported into the caller."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from tests.helpers.broken import requires_torch

import fadoctor
from fadoctor.errors import InputError, UsageError
from fadoctor.report import Report, Status

pytestmark = [pytest.mark.slow, requires_torch]  # the examined torch is this interpreter's


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600)


def test_import_fadoctor_loads_neither_torch_nor_pydantic_nor_typer_nor_typing() -> None:
    done = _run("""
        import sys, fadoctor
        print(fadoctor.__version__, sorted(m for m in ("torch", "transformers", "flash_attn",
              "pydantic", "typer", "rich", "typing", "fadoctor.api", "yaml") if m in sys.modules))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [fadoctor.__version__, "[]"]


def test_check_is_the_json_report_and_imports_nothing_of_torch_into_the_caller() -> None:
    done = _run("""
        import json, sys, fadoctor
        report = fadoctor.check(kernels="none")
        print(json.dumps({"report": report.model_dump(mode="json"),
                          "imported": [m for m in ("torch", "transformers", "flash_attn")
                                       if m in sys.modules]}))
    """)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["imported"] == []
    api = Report.model_validate(out["report"])
    cli = subprocess.run([sys.executable, "-m", "fadoctor", "check", "--format", "json",
                          "--kernels", "none", "--python", sys.executable],
                         capture_output=True, text=True, timeout=600)
    assert cli.returncode == 1, cli.stderr  # a CPU torch: FAD103 fails
    from_cli = Report.model_validate_json(cli.stdout)
    assert [(c.id, c.status) for c in api.checks] == [(c.id, c.status) for c in from_cli.checks]
    assert api.target.python == from_cli.target.python == sys.executable
    assert api.environment.torch is not None and "2.13.0" in api.environment.torch
    by_id = {c.id: c for c in api.checks}
    assert by_id["FAD102"].status == Status.PASSED and by_id["FAD103"].status == Status.FAILED


def test_preflight_raises_with_the_report_and_passes_what_it_was_asked_to_check() -> None:
    with pytest.raises(fadoctor.PreflightError) as raised:
        fadoctor.preflight(kernels="none")
    error = raised.value
    assert isinstance(error.report, Report)
    assert {f.category.value for f in error.problems} >= {"torch_cpu_only"}
    assert "torch 2.13.0+cpu is a CPU-only build" in str(error)
    report = fadoctor.preflight(kernels="none", only=["FAD102", "torch-import"])
    assert [c.id for c in report.checks] == ["FAD102"] and report.checks[0].status == "passed"


def test_static_check_and_a_warning_threshold() -> None:
    report = fadoctor.check(static=True, only=["FAD107", "FAD121"])
    by_id = {c.id: c for c in report.checks}
    assert by_id["FAD121"].status == Status.SKIPPED
    assert "check --static" in (by_id["FAD121"].skipped_reason or "")
    assert fadoctor.api.problems(report, "warning") == []


@pytest.mark.parametrize(("call", "message"), [
    (lambda: fadoctor.check(kernels="most"), "kernels='most'"),  # type: ignore[arg-type]
    (lambda: fadoctor.check(only=["FAD999"]), "no check 'FAD999'"),
    (lambda: fadoctor.check(timeout=0), "timeout=0"),
    (lambda: fadoctor.preflight(fail_on="info", static=True), "fail_on='info'"),  # type: ignore[arg-type]
])
def test_bad_arguments_are_one_clear_error(call: object, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        call()  # type: ignore[operator]


def test_an_unreadable_matrix_is_an_input_error(tmp_path: pytest.TempPathFactory) -> None:
    bad = tmp_path / "matrix.yaml"  # type: ignore[operator]
    bad.write_text("schema_version: [", encoding="utf-8")
    with pytest.raises(InputError):
        fadoctor.check(static=True, matrix=bad)


def test_a_missing_interpreter_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        fadoctor.check(python="/nonexistent/bin/python", static=True)
