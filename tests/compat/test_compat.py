"""fadoctor compat: records from real reports (the golden ones and the recorded H200 facts run
through the checks), merged, shown, checked against the schema; and the observed evidence `fix`
ranks plans by. The CLI through real child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
from packaging.version import Version
from tests.helpers.broken import requires_torch
from tests.render.test_schema import schema_text, violations

from fadoctor.compat import table
from fadoctor.compat.model import Combination, CompatFile, Record
from fadoctor.compat.observed import FAILS, INFERRED, WORKS, with_observations
from fadoctor.compat.records import merged, read, records_of
from fadoctor.evaluate import evaluate
from fadoctor.facts.files import loads
from fadoctor.facts.model import Family
from fadoctor.fix.solver import Constraints, solve
from fadoctor.install.machine import Machine
from fadoctor.matrix import load_matrix
from fadoctor.report import Report, Severity, Status

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schemas" / "compatibility.schema.json"
GOLDEN = sorted(ROOT.glob("tests/golden/*/report.json"))
H200 = ROOT / "tests" / "fixtures" / "recorded" / "h200-torch211-fa4-kernels-default.json"


def golden(name: str) -> Report:
    return Report.model_validate_json((ROOT / "tests" / "golden" / name / "report.json").read_text())


def test_a_report_becomes_one_record_per_installed_family_with_its_verdict_and_reason() -> None:
    [t4] = records_of(golden("t4-fa2-installed"), runner="gpu-t4")
    assert t4.combination == Combination(python="3.12.11", torch="2.8.0+cu128", torch_cuda="12.8",
                                         cxx11_abi=True, machine="x86_64", gpu_archs=["sm_75"],
                                         family="fa2", family_distribution="flash-attn",
                                         family_version="2.8.3")
    assert t4.verdict == "fails" and t4.reason is not None and t4.reason.startswith("FAD112: ")
    assert t4.checks["FAD112"] == "failed" and t4.runner == "gpu-t4"
    [h100] = records_of(golden("h100-torch211-cu130-no-fa"))
    assert h100.combination.family is None and h100.verdict == "works"
    assert h100.runner is not None and "sm_90" in h100.runner  # where it ran, as the report says


def test_the_kernel_smoke_results_come_with_the_record() -> None:
    facts = loads(H200.read_text(encoding="utf-8"), "recorded facts")
    [fa4] = records_of(evaluate(facts, load_matrix()))
    assert fa4.combination.family == "fa4" and fa4.combination.gpu_archs == ["sm_90"]
    kernels = {k.target: k.status for k in fa4.kernels}
    assert kernels["fa4"] == "passed" and kernels["sdpa_cudnn"] == "passed"
    assert fa4.verdict == "works"
    assert fa4.data_date is not None and fa4.data_date == load_matrix().data_date  # the data's date


def test_bench_results_come_with_the_record_and_the_table(tmp_path: Path) -> None:
    # The H200's recorded check (torch 2.11.0+cu130, flash-attn-4) and its recorded bench run.
    facts = loads(H200.read_text(encoding="utf-8"), "recorded facts")
    report = tmp_path / "report.json"
    report.write_text(evaluate(facts, load_matrix()).model_dump_json())
    bench = ROOT / "tests" / "fixtures" / "recorded" / "h200-bench-run1.json"
    run = fadoctor("compat", "record", str(report), "--bench", str(bench), "--runner", "h200",
                   "-o", str(tmp_path / "h200.record.json"))
    assert run.returncode == 0, run.stderr
    [fa4] = read(tmp_path / "h200.record.json")
    timed = {b.target: b for b in fa4.bench if b.status == "timed"}
    assert set(timed) == {"fa4", "sdpa_cudnn", "sdpa_flash", "sdpa_math"}
    assert timed["fa4"].fwd is not None and timed["fa4"].fwd.median_ms == 0.43021
    assert fa4.bench_shape is not None and "seqlen 4096" in fa4.bench_shape
    cells = json.loads(fadoctor("compat", "show", str(tmp_path / "h200.record.json"), "-f",
                                "json").stdout)["cells"]
    [cell] = [c for row in cells.values() for c in row.values()]
    assert {b["target"] for b in cell["bench"]} == set(timed) and cell["bench"][0]["where"] == "h200"
    not_bench = fadoctor("compat", "record", str(report), "--bench", str(report))
    assert not_bench.returncode == 2 and "not a `fadoctor bench" in not_bench.stderr


def test_on_a_runner_without_a_gpu_the_checks_that_need_one_are_not_judged() -> None:
    report = golden("h100-torch211-cu130-no-fa")
    stack = report.stack
    assert stack is not None
    bare = report.model_copy(update={"stack": stack.model_copy(update={"gpu_archs": []})})
    broken = [c.model_copy(update={"status": Status.FAILED, "findings": [
        f.model_copy(update={"severity": Severity.ERROR}) for f in c.findings]})
        if c.id == "FAD101" else c for c in bare.checks]
    [record] = records_of(bare.model_copy(update={"checks": broken}))
    assert record.verdict == "works"  # FAD101 (no driver) says nothing of the combination


def test_merge_keeps_one_record_per_combination_and_runner_sorted_by_torch() -> None:
    records = [r for path in GOLDEN for r in read(path)]
    data = merged([records, records[:1]])  # the same combination again replaces, never doubles
    assert len(data.records) == len(records)
    torches = [r.combination.torch or "" for r in data.records]
    assert torches == sorted(torches)


def test_the_schema_is_current_and_a_merged_file_keeps_to_it() -> None:
    text = schema_text(CompatFile)
    if os.environ.get("FADOCTOR_UPDATE_GOLDEN") == "1":
        SCHEMA.write_text(text, encoding="utf-8")
    assert SCHEMA.read_text(encoding="utf-8") == text, (
        "schemas/compatibility.schema.json differs: run with FADOCTOR_UPDATE_GOLDEN=1 and review")
    schema = json.loads(text)
    data = json.loads(merged([read(p) for p in GOLDEN]).model_dump_json())
    assert violations(data, schema, schema.get("$defs", {})) == []


def _record(torch: str, family: str | None, version: str | None, verdict: str = "works",
            reason: str | None = None, archs: List[str] = ["sm_80"]) -> Record:  # noqa: B006
    return Record(combination=Combination(python="3.11", torch=torch, gpu_archs=archs,
                                          family=family, family_version=version,
                                          cxx11_abi=True), verdict=verdict, reason=reason,
                  checks={}, fadoctor_version="0.1.0", runner="gpu-a100")


def test_the_table_has_torch_down_families_across_and_the_reason_of_each_failure() -> None:
    data = CompatFile(records=[
        _record("2.8.0+cu128", "fa2", "2.8.3"), _record("2.8.0+cu128", None, None),
        _record("2.10.0+cu130", "fa2", "2.8.3", "fails", "FAD131: undefined symbol \x1b]52;c;x\x07"),
    ])
    text = table.text(data)
    lines = text.splitlines()
    assert lines[0].split() == ["torch", "none", "fa2", "2.8.3"]
    assert lines[1].split() == ["2.8.0+cu128", "✓", "✓"]
    assert lines[2].split() == ["2.10.0+cu130", "–", "✗"]  # noqa: RUF001
    assert "\x1b" not in text and "FAD131: undefined symbol" in text  # made inert
    md = table.markdown(data)
    assert md.startswith("| torch | none | fa2 2.8.3 |\n|---|---|---|\n")
    cells = json.loads(table.as_json(data))["cells"]
    assert cells["2.10.0+cu130"]["fa2 2.8.3"]["verdict"] == "fails"


def test_fix_ranks_a_plan_seen_working_first_and_never_shows_one_seen_failing_as_best() -> None:
    matrix = load_matrix()
    machine = Machine(gpu_cc=Version("8.0"), python=Version("3.11"),
                      torch=Version("2.8.0+cu128"), torch_cxx11_abi=True, glibc=Version("2.35"))
    # FlashAttention-2 asked for: with nothing asked, the installed torch's SDPA (FA2's own
    # kernel, nothing to install) would be the best and flash-attn an alternative.
    plan = solve(machine, Constraints(family=Family.FA2), matrix)
    best = plan.best
    assert best.torch is not None and best.family is not None
    torch = f"{best.torch.version}+{best.torch.variant}"
    failing = with_observations(plan, [_record(torch, best.family.value, best.version, "fails",
                                               "FAD140: wrong output")])
    assert failing.best.evidence != FAILS
    assert next(p for p in failing.alternatives if p.evidence == FAILS).summary == best.summary
    key = (best.torch, best.family, best.version)  # a wheel and a build of it are one combination
    alternative = next(p for p in plan.alternatives if p.torch is not None
                       and (p.torch, p.family, p.version) != key)  # here: SDPA, nothing to install
    assert alternative.torch is not None
    seen = with_observations(plan, [_record(
        f"{alternative.torch.version}+{alternative.torch.variant}",
        alternative.family.value if alternative.family else None, alternative.version)])
    assert seen.best.summary == alternative.summary and seen.best.evidence == WORKS
    assert any(n.startswith("observed working: 1 run(s), on gpu-a100") for n in seen.best.notes)
    assert {p.evidence for p in seen.alternatives} == {INFERRED}
    other_gpu = with_observations(plan, [_record(torch, best.family.value, best.version, "fails",
                                                 archs=["sm_90"])])
    assert other_gpu == plan  # a run on another GPU says nothing of this one


def fadoctor(*args: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run([sys.executable, "-m", "fadoctor", *args], capture_output=True,
                          text=True, check=False, env={**os.environ, "COLUMNS": "100"})


def test_the_commands_record_merge_and_show_and_refuse_what_is_not_theirs(tmp_path: Path) -> None:
    report = ROOT / "tests" / "golden" / "t4-fa2-installed" / "report.json"
    rec = fadoctor("compat", "record", str(report), "--runner", "gpu-t4",
                   "-o", str(tmp_path / "t4.record.json"))
    assert rec.returncode == 0, rec.stderr
    [t4] = read(tmp_path / "t4.record.json")
    assert t4.runner == "gpu-t4" and t4.ran_at is not None
    merge = fadoctor("compat", "merge", str(tmp_path / "t4.record.json"), *map(str, GOLDEN),
                     "-o", str(tmp_path / "compatibility.json"))
    assert merge.returncode == 0, merge.stderr
    show = fadoctor("compat", "show", str(tmp_path / "compatibility.json"))
    assert show.returncode == 0 and show.stdout.startswith("torch ")
    (tmp_path / "bad.json").write_text('{"kind": "something else"}')
    (tmp_path / "text.json").write_text("not json")
    for bad in ("bad.json", "text.json", "missing.json"):
        run = fadoctor("compat", "merge", str(tmp_path / bad))
        assert run.returncode == 2 and "Traceback" not in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr


@pytest.mark.parametrize("observed", [True, False])
def test_fix_reads_observed_files(tmp_path: Path, observed: bool) -> None:
    base = ["fix", "--no-detect", "--gpu-cc", "8.0", "--python", "3.11", "--torch", "2.8.0+cu128",
            "--family", "fa2", "-f", "json"]
    plain = json.loads(fadoctor(*base).stdout)
    best = plain["best"]
    record = _record(best["torch"], best["family"], best["version"], "fails", "FAD140: wrong")
    path = tmp_path / "seen.json"
    path.write_text(CompatFile(records=[record]).model_dump_json())
    run = fadoctor(*base, *(["--observed", str(path)] if observed else []))
    assert run.returncode == 0, run.stderr
    plan = json.loads(run.stdout)
    if observed:
        assert plan["best"]["evidence"] != FAILS and plan["best"]["summary"] != best["summary"]
    else:
        assert plan == plain


@pytest.mark.slow
@requires_torch
def test_the_job_installs_a_real_combination_checks_it_and_records_it(tmp_path: Path) -> None:
    # torch 2.13.0 resolves to the CPU build this machine holds (the README's test command).
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "compat_job.py"), "--torch",
                          "2.13.0", "--static", "--runner", "test-cpu", "--out", str(tmp_path)],
                         capture_output=True, text=True, check=False, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    [path] = tmp_path.glob("*.record.json")
    [record] = read(path)
    assert record.runner == "test-cpu" and record.combination.family is None
    assert (record.combination.torch or "").startswith("2.13.0")
    assert record.verdict == "fails" and (record.reason or "").startswith("FAD103: ")  # CPU-only
    log = json.loads(next(tmp_path.glob("*.log.json")).read_text())
    assert log["plan"] is None and log["steps"][0].endswith("torch==2.13.0")


def test_the_shipped_h200_run_of_flash_attn_4_is_what_fix_matches_for_that_machine() -> None:
    # data/observed-compatibility.json holds torch 2.11.0+cu130 with flash-attn-4 4.0.0b36 seen
    # working on an H200 (sm_90, Python 3.12): the FA4 pick pins that version, so it matches.
    run = fadoctor("fix", "--no-detect", "--gpu-cc", "9.0", "--python", "3.12", "--torch",
                   "2.11.0+cu130", "--family", "fa4", "-f", "json")
    assert run.returncode == 0, run.stderr
    best = json.loads(run.stdout)["best"]
    assert best["family"] == "fa4" and best["version"] == "4.0.0b36", best
    assert best["evidence"] == WORKS
    assert any(n.startswith("observed working: 1 run(s), on nvidia-h200") for n in best["notes"])
