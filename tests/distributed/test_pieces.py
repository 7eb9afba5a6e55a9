"""The distributed check's small pure pieces: bus bandwidth, words, merging, the agent's reading of
the launcher's variables, the driver from a rank's raw record."""

from __future__ import annotations

import pytest
from tests.helpers.jobs import Record, job

from fadoctor.distributed.assemble import driver_probe
from fadoctor.distributed.bandwidth import algbw, bus_factor, busbw, table
from fadoctor.distributed.merge import merge_check
from fadoctor.distributed.messages import phase_text, rank_text, size_text
from fadoctor.in_target import place, rank
from fadoctor.probes import driver
from fadoctor.report import Category as C
from fadoctor.report import CheckResult, Finding, Severity, Status

# nvidia-smi --query-gpu=... on an H200 (tests/probes/test_driver.py).
SMI_H200 = "0, NVIDIA H200, 9.0, 143771, GPU-d1cc60ae-a6fd-9b59-c1eb-81db10794e3d, 580.159.04\n"
PROC_H200 = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
             "(dvs-builder@U22-I3-AF03-09-1)  Wed Sep 24 18:16:03 UTC 2025\n")


def test_bus_bandwidth_is_nccl_tests_definition() -> None:
    # doc/PERFORMANCE.md: all_reduce 2(n-1)/n, all_gather (n-1)/n, algbw = S/t in 1e9 B/s.
    assert bus_factor("all_reduce", 8) == 1.75
    assert bus_factor("all_gather", 8) == 0.875
    assert bus_factor("all_reduce", 2) == 1.0
    assert algbw(1_000_000_000, 0.5) == 2.0
    assert busbw("all_reduce", 1 << 30, 8, 0.01) == pytest.approx((1 << 30) / 0.01 / 1e9 * 1.75)
    with pytest.raises(ValueError):
        bus_factor("broadcast", 8)


def test_bandwidth_table_takes_the_slowest_rank() -> None:
    def slower(rank: int, record: Record) -> None:  # rank 1 takes 3x rank 0's time, every op
        for op in record["collective"]["ops"]:
            op["seconds"] *= 3 if rank == 1 else 1

    fast = {(r.op, r.bytes): r.seconds for r in table(job(2, 1))}
    rows = table(job(2, 1, slower))
    assert [(r.op, size_text(r.bytes)) for r in rows] == [
        ("all_reduce", "64 KiB"), ("all_reduce", "1 MiB"), ("all_gather", "64 KiB"),
        ("all_gather", "1 MiB")]
    for row in rows:
        assert row.slowest_rank == 1 and row.seconds == pytest.approx(3 * fast[row.op, row.bytes])
        assert row.busbw_gbps == pytest.approx(busbw(row.op, row.bytes, 2, row.seconds), rel=1e-3)
        assert row.correct and row.ranks == 2


def test_rank_sets_print_as_ranges() -> None:
    assert rank_text([3]) == "rank 3"
    assert rank_text(range(64)) == "ranks 0-63"
    assert rank_text([9, 0, 1, 2, 5, 6, 2]) == "ranks 0-2, 5-6, 9"


def test_phases_and_sizes_in_words() -> None:
    assert size_text(1 << 28) == "256 MiB" and size_text(1000) == "1000 B"
    assert phase_text("nccl/node 1/all_gather/1048576") == ("all_gather of 1 MiB over nccl "
                                                            "within node 1")
    assert phase_text("gloo/join") == "joining the gloo group"


def _result(status: Status, *messages: str) -> CheckResult:
    severity = {Status.FAILED: Severity.ERROR, Status.PASSED: Severity.INFO}[status]
    return CheckResult(id="FAD111", name="n", title="t", status=status, findings=[
        Finding(severity=severity, category=C.INFO if severity == Severity.INFO else
                C.TORCH_VERSION_MISMATCH, message=m) for m in messages])


def test_merging_keeps_identical_ranks_as_one_and_names_the_rest() -> None:
    ok, bad = _result(Status.PASSED, "imports"), _result(Status.FAILED, "undefined symbol")
    assert merge_check([(r, ok) for r in range(64)]) is ok
    merged = merge_check([(r, bad if r == 7 else ok) for r in range(64)])
    assert merged.status == Status.FAILED
    assert [f.message for f in merged.findings] == ["rank 7: undefined symbol",
                                                    "ranks 0-6, 8-63: imports"]
    assert merged.findings[0].evidence["ranks"] == [7]


@pytest.mark.parametrize("environ, expected", [
    ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "GROUP_RANK": "0", "MASTER_ADDR": "h",
      "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "r", "TORCHELASTIC_USE_AGENT_STORE": "True"},
     {"rank": 3, "world_size": 8, "local_rank": 3, "node_rank": 0, "launcher": "torchrun",
      "agent_store": True}),
    ({"SLURM_PROCID": "9", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "SLURM_NODEID": "1",
      "MASTER_ADDR": "h", "MASTER_PORT": "29500"},
     {"rank": 9, "world_size": 16, "local_rank": 1, "node_rank": 1, "launcher": "slurm",
      "agent_store": False}),
])
def test_the_agent_reads_torchrun_and_srun(environ: dict[str, str],
                                           expected: dict[str, object]) -> None:
    found = place.identity(environ)
    assert {k: found[k] for k in expected} == expected


@pytest.mark.parametrize("environ, message", [
    ({}, "RANK and WORLD_SIZE are not set"),
    ({"RANK": "8", "WORLD_SIZE": "8", "MASTER_ADDR": "h", "MASTER_PORT": "1"},
     "RANK 8 is not below WORLD_SIZE 8"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, "MASTER_ADDR is not set: srun does not set it"),
    ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x' is not a number"),
])
def test_the_agent_refuses_what_no_launcher_set(environ: dict[str, str], message: str) -> None:
    with pytest.raises(place.LaunchError, match=message.replace("(", r"\(")):
        place.identity(environ)


def test_run_id_is_the_same_on_every_rank_of_a_job() -> None:
    assert place.run_id({"TORCHELASTIC_RUN_ID": "abc"}) == "abc"
    assert place.run_id({"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "2"}) == "77.2"
    assert place.run_id({}) == "job"


def test_the_agent_asks_nvidia_smi_what_the_parent_parses() -> None:
    assert rank.SMI_QUERY == driver._SMI_FIELDS


def test_driver_from_a_ranks_raw_record() -> None:
    probe = driver_probe({"procfs": PROC_H200, "cuda_driver": 13000,
                          "smi": {"returncode": 0, "stdout": SMI_H200, "stderr": ""}})
    assert probe.data is not None
    assert (probe.data.source, probe.data.version, probe.data.cuda_version) == (
        "nvidia-smi", "580.159.04", "13.0")
    assert probe.data.gpus[0].compute_capability == "9.0"
    fallback = driver_probe({"procfs": PROC_H200, "cuda_driver": None,
                             "smi": {"error": "TimeoutExpired: nvidia-smi"}})
    assert fallback.data is not None and fallback.data.source == "procfs"
    assert fallback.data.version == "580.159.04"
    none = driver_probe({"procfs": None, "cuda_driver": None, "smi": None})
    assert none.data is not None and not none.data.present
    assert driver_probe(None).failure is not None


def test_rank_0_stopped_before_reaching_the_store_says_it_was_stopped() -> None:
    # A launcher's SIGTERM can come while rank 0 is still joining the store (importing torch on a
    # busy machine): the ranks it never heard from were not reached because it was stopped.
    from fadoctor.in_target import gather

    stopped = gather.Gathering(3, {"rank": 0}, 0.0)
    assert gather.gather(None, stopped, gather.Limits(120, 20, 900), lambda: True) == "SIGTERM"
    assert [(m["rank"], m["state"]) for m in stopped.missing.values()] == [
        (1, "interrupted"), (2, "interrupted")]
    unreachable = gather.Gathering(2, {"rank": 0}, 0.0)
    assert gather.gather(None, unreachable, gather.Limits(120, 20, 900), lambda: False) is None
    assert [m["state"] for m in unreachable.missing.values()] == ["no_store"]
