"""Hostile and broken input to the newer commands (issue 22): triage, model and check --model,
bench, check --facts-dir and --distributed, the rank agent. Every case is a real
`python -m fadoctor` process, bounded in CPU time and address space (RLIMIT), with the folders it
reads fingerprinted before and after, and no process of its own left behind (each run carries a
marker in its environment that every descendant inherits; /proc is searched for it after)."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from tests.faults.conftest import Run, assert_error_line, assert_inert, base_environ, unchanged
from tests.helpers.broken import requires_torch
from tests.helpers.ports import free_port

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RANK = FIXTURES / "ranks" / "rank-cpu.json"
FACTS = FIXTURES / "facts" / "t4-fa2-installed.json"
MEMORY = 2 << 30  # address space of a run (the issue saw 2-4 GB for one bad record)
MARK = "FADOCTOR_FAULT_RUN"


def survivors(tag: str) -> List[int]:
    """Processes whose environment carries this run's marker."""
    found = []
    needle = f"{MARK}={tag}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if needle in fh.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                pass
    return found


def bounded(*args: str, cpu: int = 60, stdin: Optional[bytes] = None,
            env: Optional[Dict[str, str]] = None, stdout: Any = subprocess.PIPE) -> Run:
    """`python -m fadoctor args` under a CPU and memory limit; nothing of it may survive."""
    tag = uuid.uuid4().hex
    environ = dict(env or base_environ(), **{MARK: tag})

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    done = subprocess.run([sys.executable, "-m", "fadoctor", *args], env=environ, input=stdin,
                          stdout=stdout, stderr=subprocess.PIPE, timeout=cpu * 3,
                          preexec_fn=limits, check=False)
    deadline = time.monotonic() + 10
    while survivors(tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not survivors(tag), f"left running after fadoctor {args}"
    return Run(done.returncode, done.stdout or b"", done.stderr or b"")


def record(**identity: Any) -> Dict[str, Any]:
    raw: Dict[str, Any] = json.loads(RANK.read_text())
    raw["identity"].update(identity)
    return raw


def folder(tmp_path: Path, records: List[Any]) -> Path:
    out = tmp_path / "ranks"
    out.mkdir()
    for i, raw in enumerate(records):
        body = raw if isinstance(raw, str) else json.dumps(raw)
        (out / f"rank-{i:05d}.json").write_text(body)
    return out


# -- 1. terminal escapes ------------------------------------------------------------------------

ESC = "\x1b]52;c;cHduZWQ=\x07\x1b[31m\x9b2J\u202e"
LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
         "vocab_size": 128256}


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_config_s_text_reaches_no_terminal(tmp_path: Path, fmt: str) -> None:
    model = tmp_path / f"model{ESC}"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({**LLAMA, "model_type": f"llama{ESC}",
                                                   "rope_scaling": {"rope_type": f"yarn{ESC}",
                                                                    "factor": 4.0}}))
    with unchanged(tmp_path):
        run = bounded("model", str(model), "--no-detect", "-f", fmt)
    assert run.code == 0, run
    text = json.loads(run.text)["spec"]["model_type"] if fmt == "json" else run.text
    assert_inert(text)
    assert "\\x1b]52" in text


# -- 2. regex cost --------------------------------------------------------------------------------

ADVERSARIAL = [" " * 3000 + ":", "\t" * 3000 + "=", "- " * 1500 + ":", "*" * 3000 + "=",
               "a" + " " * 3000 + ":x" + " " * 3000 + "y", "0" * 3000 + "GB", "_" * 3000 +
               " was built for", "Authorization:" + " " * 3000, "a." * 1500 + "@",
               "torch " * 500, "Python version:" + " \t" * 1500 + "3"]


def test_triage_costs_under_a_cpu_second_a_megabyte_of_hostile_lines() -> None:
    body = "\n".join(ADVERSARIAL[i % len(ADVERSARIAL)] for i in range(400)).encode()
    body = (body + b"\n") * max(1, (1 << 20) // len(body))
    started = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    run = bounded("triage", "-", "--redact", stdin=body, cpu=30)
    used = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - started
    assert run.code in (0, 1), run
    assert used < 1.0 * len(body) / (1 << 20) + 2.0, f"{used:.1f} CPU-s for {len(body)} bytes"


# Short ids: a megabyte-long test id reaches the environment (PYTEST_CURRENT_TEST) and no child starts.
@pytest.mark.parametrize("line", ["/a" * (1 << 19), "/a" * 999 + "\n"], ids=["one-line", "lines"])
def test_a_megabyte_of_one_shape_costs_under_a_cpu_second(line: str) -> None:
    """One shape all through (a path with no site-packages in it took 31 CPU-s a MB: the
    interpreter's prefix was searched for from every '/' of it)."""
    body = (line * max(1, (1 << 20) // len(line))).encode()
    started = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    run = bounded("triage", "-", "--redact", stdin=body, cpu=30)
    used = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - started
    assert run.code in (0, 1), run
    assert used < 1.0 * len(body) / (1 << 20) + 2.0, f"{used:.1f} CPU-s for {len(body)} bytes"


# -- 3. redaction ---------------------------------------------------------------------------------

SECRETS = {"bearer": "Authorization: Bearer sEcReT0123456789abcdef",
           "quoted": 'token="sEcReT0123456789abcdef" password="sEcReT0123456789abcdef"',
           "hf": "HF_TOKEN=hf_sEcReT0123456789abcdefghijkl",
           "long": "ImportError: " + "x" * 400 + " api_key=sEcReT0123456789abcdef"}


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_triage_redacts_every_planted_secret_in_every_format(tmp_path: Path, fmt: str) -> None:
    paste = tmp_path / "report.txt"
    paste.write_text("\n".join(SECRETS.values()) + "\nflash_attn_2_cuda undefined symbol\n")
    run = bounded("triage", str(paste), "--redact", "-v", "-f", fmt)
    assert run.code in (0, 1), run
    assert "sEcReT" not in run.text
    if fmt == "json":
        json.loads(run.text)


def test_snapshot_and_check_redact_on_values_and_json_stays_json(tmp_path: Path) -> None:
    raw = json.loads(FACTS.read_text())
    raw["host"]["data"]["environment"] = {"NOTE": 'password="sEcReT0123456789" token="x\\"y"'}
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(raw))
    for fmt in ("json", "text", "markdown", "junit", "github"):
        run = bounded("check", "--facts", str(facts), "--redact", "-v", "-f", fmt)
        assert run.code in (0, 1) and "sEcReT" not in run.text, (fmt, run)
    json.loads(bounded("check", "--facts", str(facts), "--redact", "-f", "json").text)


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "junit", "github", "snapshot"])
def test_redact_takes_every_rank_s_host_name_out_of_a_job(tmp_path: Path, fmt: str) -> None:
    raw = record(host="gpu-node-17.cluster", master_addr="head-node.cluster")
    raw["stages"]["host"]["data"]["environment"] = {"HF_TOKEN": "sEcReT0123456789"}
    ranks = str(folder(tmp_path, [raw]))
    args = (["snapshot", "--facts-dir", ranks, "--redact", "-o", "-"] if fmt == "snapshot" else
            ["check", "--facts-dir", ranks, "--redact", "-v", "-f", fmt])
    run = bounded(*args)
    assert run.code in (0, 1), run
    for secret in ("gpu-node-17", "head-node", "sEcReT"):
        assert secret not in run.text, (secret, run.text)


# -- 4. reading what it should not --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
def test_only_regular_files_of_bounded_size_are_read(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "input.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        with path.open("wb") as fh:
            fh.truncate(1 << 30)  # sparse: 1 GiB that costs no disk
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (ranks / "rank-00000.json").symlink_to(path)
    for args in (["check", "--facts", str(path)], ["model", str(path), "--no-detect"],
                 ["check", "--facts-dir", str(ranks)], ["triage", str(path)],
                 ["matrix", "lint", "--matrix", str(path)]):
        run = bounded(*args, cpu=30)
        assert_error_line(run, 2)


def test_a_rank_record_naming_a_fifo_as_python_or_extension_never_hangs(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    import socket

    raw = record(host=socket.gethostname())
    raw["python"] = str(fifo)
    raw["stages"]["files"]["data"]["extensions"] = [{"path": str(fifo)}]
    run = bounded("check", "--facts-dir", str(folder(tmp_path, [raw])), "-f", "json", cpu=60)
    assert run.code in (0, 1, 2), run


def test_a_world_of_a_billion_ranks_is_refused_without_the_work(tmp_path: Path) -> None:
    run = bounded("check", "--facts-dir", str(folder(tmp_path, [record(world_size=10**9)])),
                  cpu=30)
    assert_error_line(run, 2, "world_size")


# -- 5. inconsistent job records ----------------------------------------------------------------


@pytest.mark.parametrize(("records", "words"), [
    ([record(rank=0, world_size=2), record(rank=0, world_size=2)], ["more than once"]),
    ([record(rank=0, world_size=2), record(rank=1, world_size=4)], ["world size"]),
    ([record(rank=7, world_size=2)], ["rank 7"]),
    ([record(rank=-1, world_size=2)], ["rank -1"]),
    ([record(rank=0, world_size=0)], ["world_size 0"]),
    ([record(rank=0, world_size=4, local_rank=-1)], ["LOCAL_RANK -1"]),
    ([record(rank=0, world_size=4, local_rank=5, local_world_size=2)], ["LOCAL_RANK 5"]),
    ([record(rank=0, world_size=4, local_world_size=8)], ["LOCAL_WORLD_SIZE 8"]),
    ([record(rank=0, world_size=4, node_rank=-3)], ["node rank -3"]),
    ([record(rank=0, world_size=1, master_port=99999)], ["MASTER_PORT 99999"]),
])
def test_inconsistent_job_records_are_bad_input(tmp_path: Path, records: List[Any],
                                                words: List[str]) -> None:
    assert_error_line(bounded("check", "--facts-dir", str(folder(tmp_path, records))), 2, *words)


def test_a_gathered_file_claiming_no_ranks_does_not_pass(tmp_path: Path) -> None:
    out = tmp_path / "ranks"
    out.mkdir()
    (out / "gathered.json").write_text(json.dumps({"format": "fadoctor-gather/1",
                                                   "world_size": 0, "ranks": []}))
    assert_error_line(bounded("check", "--facts-dir", str(out)), 2, "world_size")


# -- 7. and 9. bad values and malformed records: exit 2 or 4, never 3 ---------------------------


def malformed() -> List[Any]:
    cases: List[Any] = ["[]", "{", "[" * 100000 + "]" * 100000, {"format": "fadoctor-rank/1"}]
    for where, value in (("identity", []), ("stages", []), ("identity", {"rank": "x"}),
                         ("driver", "x"), ("kernels", {"stages": 3}), ("collective", [1]),
                         ("extensions", {"a": 1}), ("python", None)):
        raw = copy.deepcopy(record())
        raw[where] = value
        cases.append(raw)
    return cases


@pytest.mark.parametrize("case", range(len(malformed())))
def test_malformed_rank_records_are_bad_input_or_unknown_never_a_crash(tmp_path: Path,
                                                                      case: int) -> None:
    run = bounded("check", "--facts-dir", str(folder(tmp_path, [malformed()[case]])))
    if run.code != 1:  # an empty list where stages were: the stages are unknown (skipped)
        assert_error_line(run, 2)


@pytest.mark.parametrize(("config", "words"), [
    ({"head_dim": 0}, ["head_dim"]), ({"num_key_value_heads": 5}, ["divide"]),
    ({"num_key_value_heads": 64}, ["divide"]), ({"max_position_embeddings": "lots"},
                                                ["max_position_embeddings"]),
    ({"attn_logit_softcapping": "x"}, ["softcapping"]), ({"torch_dtype": ["x"]}, ["torch_dtype"]),
    ({"vocab_size": 10**30}, ["vocab_size"]), ({"model_type": ["llama"]}, ["model_type"]),
    ({"hidden_size": 8}, ["head_dim"]),
])
def test_a_config_that_cannot_be_a_model_is_bad_input(tmp_path: Path, config: Dict[str, Any],
                                                      words: List[str]) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, **config}))
    assert_error_line(bounded("model", str(path), "--no-detect"), 2, *words)


@pytest.mark.parametrize(("args", "words"), [
    (["model", "llama-3.1-8b", "--no-detect", "--gpu-memory", "-1"], ["--gpu-memory"]),
    (["model", "llama-3.1-8b", "--no-detect", "--gpu-memory", "nan"], ["--gpu-memory"]),
    (["model", "llama-3.1-8b", "--no-detect", "--gpu-memory", "inf"], ["--gpu-memory"]),
    (["model", "llama-3.1-8b", "--no-detect", "--seq", "-4096"], ["--seq"]),
    (["check", "--facts", str(FACTS), "--model", "llama-3.1-8b", "--model-plan", "batch=0"],
     ["batch"]),
    (["check", "--facts", str(FACTS), "--model", "llama-3.1-8b", "--model-plan", "seq=-4096"],
     ["seq"]),
    (["check", "--facts", str(FACTS), "--model", "llama-3.1-8b", "--model-plan", "lora_r=0"],
     ["lora_r"]),
    (["check", "--facts", str(FACTS), "--model-plan", "batch=2"], ["--model"]),
    (["check", "--facts", str(FACTS), "--model", "llama-3.1-8b", "--model-plan",
      "batch=1,batch=2"], ["batch", "twice"]),
    (["bench", "--timeout", "inf"], ["--timeout"]),
    (["check", "--python", ""], ["--python"]),
    (["bench", "--python", ""], ["--python"]),
    (["check", "--facts", str(FACTS), "--only", "FAD101", "--ignore", "FAD101"], ["FAD101"]),
    (["check", "--facts-dir", str(FIXTURES), "--facts", str(FACTS)], ["--facts"]),
    (["check", "--facts-dir", str(FIXTURES), "--kernels", "full"], ["--kernels"]),
])
def test_bad_values_and_contradictions_are_exit_2(args: List[str], words: List[str]) -> None:
    assert_error_line(bounded(*args), 2, *words)


@pytest.mark.parametrize(("env", "words"), [
    ({"MASTER_PORT": "99999"}, ["MASTER_PORT"]),
    ({"MASTER_ADDR": "no-such-host.invalid"}, ["does not resolve"]),
    ({"WORLD_SIZE": "1000000000"}, ["WORLD_SIZE 1000000000", "131072"]),
    ({"LOCAL_RANK": "-1"}, ["LOCAL_RANK -1"]),
    ({"LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "2", "WORLD_SIZE": "4"}, ["LOCAL_RANK 3"]),
])
def test_a_launch_that_cannot_work_fails_fast(env: Dict[str, str], words: List[str]) -> None:
    launch = base_environ(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(free_port()))
    launch.update(env)
    started = time.monotonic()
    assert_error_line(bounded("check", "--distributed", env=launch), 2, *words)
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("args", [["model", "llama-3.1-8b", "--no-detect"], ["model", "--list"],
                                  ["rank-script"]])
def test_a_full_disk_is_exit_4(args: List[str]) -> None:
    with open("/dev/full", "wb") as full:
        run = bounded(*args, stdout=full)
    assert_error_line(run, 4, "No space left")


@pytest.mark.parametrize("where", ["file", "under-a-file", "read-only"])
def test_the_rank_agent_refuses_an_out_it_cannot_write_at_once(tmp_path: Path, where: str
                                                               ) -> None:
    agent = subprocess.run([sys.executable, "-m", "fadoctor", "rank-script"], capture_output=True,
                           text=True, check=True).stdout.strip()
    existing = tmp_path / "file"
    existing.write_text("x")
    out = {"file": existing, "under-a-file": existing / "ranks", "read-only": Path("/proc/x")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-B", agent, "--out", str(out[where])],
                          env=base_environ(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                                           MASTER_PORT=str(free_port())),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("fadoctor rank agent: error: --out"), done.stderr
    assert time.monotonic() - started < 5  # before any probe (it was a traceback after them)


@pytest.mark.parametrize("body", ["[" * 100000 + "]" * 100000, '{"a":' * 100000 + "1" + "}" * 100000],
                         ids=["lists", "objects"])
def test_a_rollback_file_nested_too_deep_is_bad_input(tmp_path: Path, body: str) -> None:
    path = tmp_path / "rollback.json"
    path.write_text(body)
    assert_error_line(bounded("fix", "--rollback", str(path), "--yes"), 2, "rollback file")


# -- 10. wrong target ---------------------------------------------------------------------------


def test_a_job_file_with_leading_whitespace_is_a_job_file(tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    run = bounded("snapshot", "--facts-dir", str(folder(tmp_path, [record()])), "-o", str(job))
    assert run.code == 0, run
    job.write_text("\n \t\n" * 100 + job.read_text())
    run = bounded("check", "--facts", str(job), "-f", "json")
    assert run.code in (0, 1), run
    assert json.loads(run.text)


# -- 8. and 10. the preflight action ---------------------------------------------------------------


def action_check(tmp_path: Path, inputs: Dict[str, str], env: Optional[Dict[str, str]] = None
                 ) -> Any:
    from tests.test_preflight_action import Runner, installed_fadoctor

    runner = Runner(tmp_path, {"fadoctor": installed_fadoctor(), "python": sys.executable,
                               **inputs}, env)
    return runner.run()[-1]


def test_the_action_reads_every_line_of_args(tmp_path: Path) -> None:
    step = action_check(tmp_path, {"args": "--ignore FAD110\n--ignore FAD999\n"})
    assert step.code == 2 and "FAD999" in step.out, step.out  # the second line reached check


@pytest.mark.parametrize(("redact", "code"), [("yes", None), ("maybe", 2)])
def test_the_action_reads_redact_as_a_boolean_or_refuses_it(tmp_path: Path, redact: str,
                                                            code: Optional[int]) -> None:
    step = action_check(tmp_path, {"redact": redact, "args": "--only FAD999" if code is None
                                   else ""})
    if code is None:  # honoured: --redact reached check, which then names the bad --only
        assert step.code == 2 and "FAD999" in step.out, step.out
    else:
        assert step.code == code and "neither true nor false" in step.out, step.out


def test_the_action_refuses_to_examine_its_own_interpreter_when_python3_is_missing(
        tmp_path: Path) -> None:
    import shutil

    tools = tmp_path / "bin"  # bash alone: no python3
    tools.mkdir()
    (tools / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    step = action_check(tmp_path, {"python": ""}, {"PATH": str(tools)})
    assert step.code == 2 and "no python3 on PATH" in step.out, step.out


# -- 6. leftovers --------------------------------------------------------------------------------


def _default_signals() -> None:
    import signal
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _rank_0_under_way(temp: Path, tag: str, port: str) -> subprocess.Popen[bytes]:
    """`check --distributed` as rank 0 of two (rank 1 never comes), once its agent and a lane
    run, with its temporary folder under `temp`."""
    temp.mkdir()
    env = base_environ(RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                       TMPDIR=str(temp), **{MARK: tag})
    # Ctrl-C and a hangup as a terminal delivers them: a suite started in the background (nohup,
    # `&` without job control) hands its children SIGINT and SIGHUP ignored, and Python keeps an
    # inherited ignore
    proc = subprocess.Popen([sys.executable, "-m", "fadoctor", "check", "--distributed"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_default_signals)
    deadline = time.monotonic() + 60
    while len(survivors(tag)) < 3 and time.monotonic() < deadline:  # fadoctor, agent, a lane
        time.sleep(0.2)
    time.sleep(2)
    return proc


def _nothing_left(temp: Path, tag: str, wait: float = 10) -> None:
    deadline = time.monotonic() + wait
    while survivors(tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not survivors(tag)
    time.sleep(2)  # nothing recreates the folder afterwards
    assert list(temp.iterdir()) == []


@requires_torch  # the rank agent's collective test and store need torch.distributed
@pytest.mark.parametrize("sig", ["SIGINT", "SIGHUP"])
def test_a_signal_to_rank_0_leaves_no_agent_and_no_folder(tmp_path: Path, sig: str) -> None:
    import signal

    tag = uuid.uuid4().hex
    proc = _rank_0_under_way(tmp_path / "temp", tag, str(free_port()))
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    _nothing_left(tmp_path / "temp", tag)


def test_sigkill_to_rank_0_leaves_no_agent_no_lane_and_no_folder(tmp_path: Path) -> None:
    # fadoctor has no say in a SIGKILL: its agent notices its parent's death and ends, its
    # lanes end with the agent, and the agent removes the temporary folder fadoctor made.
    tag = uuid.uuid4().hex
    proc = _rank_0_under_way(tmp_path / "temp", tag, str(free_port()))
    proc.kill()
    proc.wait(timeout=60)
    try:
        _nothing_left(tmp_path / "temp", tag, wait=30)
    finally:  # a failure leaves nothing behind either
        for pid in survivors(tag):
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        for stream in (proc.stdout, proc.stderr):
            assert stream is not None
            stream.close()
