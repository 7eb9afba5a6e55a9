"""The job's report from gathered facts (pure): differences named by rank, identical ranks once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest
from tests.helpers.jobs import Record, h200_facts, job, on_h200

from fadoctor.distributed.collect import read_job_file
from fadoctor.distributed.evaluate import evaluate_job
from fadoctor.distributed.models import JobFacts, MissingRank, RankPlace
from fadoctor.distributed.render import job_line
from fadoctor.distributed.report import JobReport
from fadoctor.errors import InputError
from fadoctor.evaluate import evaluate
from fadoctor.facts.files import dumps
from fadoctor.facts.model import Facts
from fadoctor.matrix import Matrix, load_matrix
from fadoctor.report import Category, CheckResult, Severity, Status


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(None)


def check(report: JobReport, check_id: str) -> CheckResult:
    return next(c for c in report.merged.checks if c.id == check_id)


def messages(result: CheckResult) -> str:
    return "\n".join(f.message for f in result.findings) + (result.skipped_reason or "")


def test_64_identical_ranks_report_as_one(matrix: Matrix) -> None:
    report = evaluate_job(on_h200(job(64, 8)), matrix)
    single = evaluate(h200_facts(), matrix)
    merged = {c.id: c for c in report.merged.checks}
    for result in single.checks:  # every rank check reads exactly as on one rank
        assert merged[result.id] == result
    assert check(report, "FAD201").findings[0].message == "all 64 ranks reported, from 8 node(s)"
    for job_check in ("FAD202", "FAD203", "FAD204", "FAD205"):
        assert check(report, job_check).status == Status.PASSED, messages(check(report, job_check))
    assert [n.ranks for n in report.nodes] == [list(range(i, i + 8)) for i in range(0, 64, 8)]
    assert len(report.ranks) == 64 and report.ranks[63].report == single


def test_a_rank_with_another_torch_is_named_with_its_node(matrix: Matrix) -> None:
    def other_torch(rank: int, facts: Facts) -> Facts:
        if rank != 13:
            return facts
        assert facts.torch.data is not None
        torch = facts.torch.model_copy(update={"data": facts.torch.data.model_copy(
            update={"version": "2.10.0+cu130"})})
        return facts.model_copy(update={"torch": torch})

    report = evaluate_job(on_h200(job(16, 8), other_torch), matrix)
    software = check(report, "FAD202")
    assert software.status == Status.FAILED
    line = next(f for f in software.findings if f.subject == "torch")
    assert line.severity == Severity.ERROR and line.category == Category.RANKS_DIFFER
    assert line.message == ("torch differs: 2.11.0+cu130 on ranks 0-12, 14-15 (node 0, node 1); "
                            "2.10.0+cu130 on rank 13 (node 1)")
    # The rank check that reads torch's version shows both groups, by rank set.
    imported = check(report, "FAD102")
    assert [f.message.split(":")[0] for f in imported.findings] == ["ranks 0-12, 14-15",
                                                                    "rank 13"]


def test_same_version_other_build_differs_by_extension_hash(matrix: Matrix) -> None:
    def hashes(rank: int, record: Record) -> None:
        record["extensions"] = [{"path": "/opt/venv/site/flash_attn_2_cuda.so",
                                 "sha256": ("b" if rank == 1 else "a") * 64, "size": 1}]

    report = evaluate_job(job(4, 2, hashes), matrix)
    line = next(f for f in check(report, "FAD202").findings
                if f.subject == "extension flash_attn_2_cuda.so")
    assert line.severity == Severity.ERROR
    assert line.message == ("extension flash_attn_2_cuda.so differs: aaaaaaaaaaaaaaaa on ranks "
                            "0, 2-3 (node 0, node 1); bbbbbbbbbbbbbbbb on rank 1 (node 0)")


def test_environment_differences_are_warnings_but_cuda_visible_devices_is_info(
        matrix: Matrix) -> None:
    def env(rank: int, record: Record) -> None:
        record["environment"] = {"NCCL_IB_HCA": "mlx5_0" if rank < 2 else "mlx5_1"}
        host = record["stages"]["host"]["data"]
        host["environment"] = {"CUDA_VISIBLE_DEVICES": str(rank % 2)}

    result = check(evaluate_job(job(4, 2, env), matrix), "FAD204")
    assert result.status == Status.WARNING
    by_key = {f.subject: f for f in result.findings}
    assert by_key["env NCCL_IB_HCA"].severity == Severity.WARNING
    assert by_key["env NCCL_IB_HCA"].message.endswith("mlx5_1 on ranks 2-3 (node 1)")
    assert by_key["env CUDA_VISIBLE_DEVICES"].severity == Severity.INFO


def test_missing_ranks_are_named_by_what_rank_0_saw(matrix: Matrix) -> None:
    gathered = job(8, 4)
    place = gathered.ranks[5].place
    kept = [r for r in gathered.ranks if r.place.rank not in (5, 6, 7)]
    missing = [MissingRank(rank=5, state="lost", place=place, silent_s=21.0, waited_s=40.0),
               MissingRank(rank=6, state="never_arrived", waited_s=120.0),
               MissingRank(rank=7, state="never_arrived", waited_s=120.0)]
    report = evaluate_job(gathered.model_copy(update={"ranks": kept, "missing": missing}), matrix)
    result = check(report, "FAD201")
    assert result.status == Status.FAILED
    assert [f.message for f in result.findings] == [
        "rank 5 started on node-1 but fell silent 21 s before rank 0 gave up: killed, crashed, "
        "or its machine went away",
        "ranks 6-7 never reached the job's store (rank 0 waited 120 s): the process did not "
        "start, or could not reach MASTER_ADDR"]
    assert [m.rank for m in report.missing] == [5, 6, 7]
    assert job_line(report).startswith("5 of 8 ranks reported, from 2 node(s)")


def test_two_ranks_on_one_gpu_and_a_rank_without_one(matrix: Matrix) -> None:
    def same_gpu(rank: int, facts: Facts) -> Facts:
        return facts

    gathered = on_h200(job(4, 4), same_gpu)
    ranks = list(gathered.ranks)
    for r in (1, 2):
        c = ranks[r].collectives
        assert c is not None and c.device is not None
        update: Dict[str, Any] = ({"uuid": ranks[0].collectives.device.uuid}  # type: ignore[union-attr]
                                  if r == 1 else {"index": None, "name": None,
                                                  "error": "LOCAL_RANK 2, but torch sees 2 GPU(s)"})
        device = c.device.model_copy(update=update)
        ranks[r] = ranks[r].model_copy(update={"collectives": c.model_copy(
            update={"device": device})})
    result = check(evaluate_job(gathered.model_copy(update={"ranks": ranks}), matrix), "FAD205")
    assert result.status == Status.FAILED
    assert [f.message.split(":")[0] for f in result.findings] == [
        "rank 2 has no GPU of its own", "ranks 0-1 share one GPU (GPU-d1cc60ae-a6fd-9b59-c1eb-"
        "81db10794e3d-0 on node-0)"]


def _broken(phase: str, kind: str, reason: str, never: Any = None) -> Any:
    def edit(rank: int, record: Record) -> None:
        if rank in (0, 1, 2):
            coll = record["collective"]
            coll["ops"] = [op for op in coll["ops"] if op["bytes"] < 1 << 20]
            coll.update(phase=phase, failure={"kind": kind, "reason": reason,
                                              "never_arrived": never})
    return edit


def test_a_hung_collective_names_the_ranks_that_never_arrived(matrix: Matrix) -> None:
    edit = _broken("gloo/job/all_reduce/1048576", "timeout",
                   "did not finish within 120 s; killed", [3])
    report = evaluate_job(job(4, 2, edit), matrix)
    gloo = check(report, "FAD206")
    assert gloo.status == Status.FAILED
    assert gloo.findings[0].message == (
        "ranks 0-2: all_reduce of 1 MiB over gloo across the job hung (did not finish within "
        "120 s; killed); rank 3 never arrived there")
    assert gloo.findings[0].category == Category.COLLECTIVE_FAILED
    nccl = check(report, "FAD207")
    assert nccl.status == Status.SKIPPED
    assert nccl.skipped_reason == ("not reached: the test stopped before NCCL on ranks 0-2 "
                                   "(FAD206)")


def test_a_wrong_result_is_an_error(matrix: Matrix) -> None:
    def wrong(rank: int, record: Record) -> None:
        if rank == 1:
            record["collective"]["ops"][2]["correct"] = False

    result = check(evaluate_job(job(2, 1, wrong), matrix), "FAD206")
    assert result.status == Status.FAILED
    assert result.findings[0].message == ("all_reduce of 1 MiB over gloo (job) gave a wrong "
                                          "result on rank 1")


def test_recorded_cpu_job_passes_gloo_and_skips_nccl_with_the_reason(matrix: Matrix) -> None:
    report = evaluate_job(job(2, 1), matrix)
    gloo = check(report, "FAD206")
    assert gloo.status == Status.PASSED
    assert gloo.findings[0].message == "all_reduce and all_gather over gloo are right on ranks 0-1"
    assert "gloo bus bandwidth across the job (2 ranks), GB/s: all_reduce 64 KiB" in \
        gloo.findings[1].message
    nccl = check(report, "FAD207")
    assert nccl.status == Status.SKIPPED
    assert nccl.skipped_reason == ("this torch has no NCCL (torch.distributed.is_nccl_available() "
                                   "is False)")
    assert check(report, "FAD205").skipped_reason is not None


def test_ignore_takes_job_checks_too(matrix: Matrix) -> None:
    report = evaluate_job(job(2, 1), matrix, ignore={"FAD204", "FAD101"})
    ids = [c.id for c in report.merged.checks]
    assert "FAD204" not in ids and "FAD101" not in ids and "FAD201" in ids


def test_places_read_from_the_record_keep_the_launchers_numbers() -> None:
    gathered: JobFacts = job(16, 8)
    place: RankPlace = gathered.ranks[9].place
    assert (place.rank, place.local_rank, place.node_rank, place.node) == (9, 1, 1, "node 1")


def test_without_the_collective_test_a_ranks_gpu_is_the_one_torch_sees(matrix: Matrix) -> None:
    gathered = on_h200(job(2, 1))
    ranks = [r.model_copy(update={"collectives": None}) for r in gathered.ranks]
    torch = ranks[1].facts.torch.data
    assert torch is not None and torch.devices is not None
    a100 = torch.devices[0].model_copy(update={"name": "NVIDIA A100-SXM4-80GB",
                                               "capability": "8.0"})
    facts = ranks[1].facts.model_copy(update={"torch": ranks[1].facts.torch.model_copy(
        update={"data": torch.model_copy(update={"devices": [a100]})})})
    ranks[1] = ranks[1].model_copy(update={"facts": facts})
    result = check(evaluate_job(gathered.model_copy(update={"ranks": ranks}), matrix), "FAD203")
    assert result.findings[0].message == ("GPU differs: NVIDIA H200 (sm_90) on rank 0 (node 0); "
                                          "NVIDIA A100-SXM4-80GB (sm_80) on rank 1 (node 1)")
    assert check(evaluate_job(gathered.model_copy(update={"ranks": ranks}), matrix),
                 "FAD205").status == Status.SKIPPED


def test_a_byte_that_is_not_utf8_travels_through_the_job_and_its_facts_file(
        matrix: Matrix, tmp_path: Path) -> None:
    """A rank whose environment holds a path that is not UTF-8 (kept as a surrogate escape, as
    Python holds it): the job is evaluated, written by `snapshot --distributed` and read back by
    `check --facts` unchanged; a job file whose rank has a value that does not parse is refused
    with the rank and field named."""
    def odd(rank: int, record: Record) -> None:
        record["stages"]["host"]["data"]["environment"] = {
            "LD_LIBRARY_PATH": "/opt/caf\udce9/lib" if rank else "/opt/lib"}

    facts = job(2, 1, odd)
    assert check(evaluate_job(facts, matrix), "FAD204").status == Status.WARNING
    path = tmp_path / "job.json"
    path.write_text(dumps(facts), encoding="utf-8")
    assert read_job_file(path) == facts
    broken = json.loads(path.read_text(encoding="utf-8"))
    broken["ranks"][1]["facts"]["torch"]["data"]["cuda"] = "12.x; rm"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(InputError, match=r"ranks\.1\.facts\.torch\.data\.cuda"):
        read_job_file(path)
