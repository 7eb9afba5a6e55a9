"""Where the output goes: a closed stdout, a broken pipe and a full disk are exit 4, never a
silent success; a closed stderr changes no exit code; a Latin-1 locale gets a readable report;
TERM=dumb and NO_COLOR get no escape sequences, even on a terminal."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from tests.faults.conftest import assert_inert, base_environ, fadoctor

FIXTURE = str(Path(__file__).resolve().parents[1] / "fixtures" / "facts" / "t4-fa2-installed.json")
CHECK = ["check", "--facts", FIXTURE]  # one failure: exit 1


def in_sh(redirect: str, *args: str, env: Optional[Dict[str, str]] = None
          ) -> subprocess.CompletedProcess[bytes]:
    """fadoctor under /bin/sh with `redirect` applied (`>&-` closes stdout)."""
    command = " ".join([sys.executable, "-m", "fadoctor", *args, redirect])
    return subprocess.run(["/bin/sh", "-c", command], capture_output=True, timeout=120,
                          env=env or base_environ(), check=False)


@pytest.mark.parametrize("args", [CHECK, ["snapshot", "--static", "-o", "-"], ["explain"],
                                  ["--version"], ["--help"], [], ["fix", "--no-detect"],
                                  ["matrix", "show", "--gpu", "9.0"]])
def test_a_closed_stdout_is_exit_4_with_one_line(args: List[str]) -> None:
    done = in_sh(">&-", *args)
    assert done.returncode == 4, done
    assert done.stderr.decode().splitlines() == [done.stderr.decode().strip()]
    assert done.stderr.startswith(b"fadoctor: error: cannot write")


@pytest.mark.parametrize("args", [[*CHECK], [*CHECK, "-o", "/dev/full"], ["explain", "FAD101"]])
def test_a_full_disk_is_exit_4(args: List[str]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    redirect = "" if "-o" in args else ">/dev/full"
    done = in_sh(redirect, *args)
    assert done.returncode == 4, done
    assert b"No space left on device" in done.stderr


def test_a_broken_pipe_is_exit_4() -> None:
    read, write = os.pipe()
    os.close(read)  # nobody will read
    try:
        run = fadoctor(*CHECK, stdout=write)
    finally:
        os.close(write)
    assert run.code == 4 and b"cannot write the report to stdout" in run.err


@pytest.mark.parametrize(("args", "code"), [(CHECK, 1), (["check", "--bogus"], 2),
                                            (["check", "--facts", "/nonexistent"], 2)])
def test_a_closed_stderr_keeps_the_exit_code(args: List[str], code: int) -> None:
    done = in_sh("2>&-", *args)
    assert done.returncode == code
    assert done.stderr == b""


def latin1_locale(tmp: Path) -> Optional[Dict[str, str]]:
    """An environment whose locale is en_US.ISO-8859-1, compiled here if the system lacks it."""
    if shutil.which("localedef") is None:
        return None
    subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(tmp / "en_US.ISO-8859-1")],
                   capture_output=True, check=False)
    if not (tmp / "en_US.ISO-8859-1").is_dir():
        return None
    env = base_environ(LOCPATH=str(tmp), LC_ALL="en_US.ISO-8859-1", PYTHONUTF8="0")
    env.pop("PYTHONIOENCODING", None)
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.stdout.encoding)"],
                           capture_output=True, text=True, env=env, check=False)
    return env if probe.stdout.strip().lower().replace("-", "") in ("iso88591", "latin1") else None


@pytest.mark.parametrize("encoding", ["latin-1 locale", "ascii"])
def test_a_non_utf8_terminal_gets_a_readable_report(tmp_path: Path, encoding: str) -> None:
    if encoding == "ascii":
        env: Optional[Dict[str, str]] = base_environ(PYTHONIOENCODING="ascii")
    else:
        env = latin1_locale(tmp_path)
        if env is None:
            pytest.skip("cannot make an ISO-8859-1 locale here")
    for fmt in ("text", "markdown", "junit", "github"):
        run = fadoctor(*CHECK, "--format", fmt, env=env)
        assert run.code == 1 and run.err == b"", run
        text = run.out.decode("latin-1")
        assert "FAD112" in text
        if fmt == "text":
            assert "\nx FAD112 flash-attn-gpu" in text and "\n+ FAD101" in text
    snapshot = fadoctor("snapshot", "--static", "-o", "-", env=env)
    assert snapshot.code == 0 and snapshot.out.startswith(b"{")


def on_a_terminal(env: Dict[str, str]) -> bytes:
    """The text report as a terminal (a real pty on stdout) receives it, read while it runs."""
    leader, follower = pty.openpty()
    chunks: List[bytes] = []
    try:
        proc = subprocess.Popen([sys.executable, "-m", "fadoctor", *CHECK], stdout=follower,
                                stderr=subprocess.PIPE, env=env)
        os.close(follower)
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other side is closed, everything was read
                break
            if not chunk:
                break
            chunks.append(chunk)
        _, err = proc.communicate(timeout=120)
    finally:
        os.close(leader)
    assert proc.returncode == 1, err
    return b"".join(chunks)


def test_colour_only_on_a_terminal_that_wants_it() -> None:
    coloured = on_a_terminal(base_environ(TERM="xterm-256color", NO_COLOR=""))
    assert b"\x1b[" in coloured  # the test can see colour when there is some
    assert b"FAD112" in coloured  # a new pty says its width is 0: the report is still whole
    for env in (base_environ(TERM="dumb"), base_environ(TERM="xterm", NO_COLOR="1")):
        plain = on_a_terminal(env)
        assert b"\x1b" not in plain and b"FAD112" in plain
        assert_inert(plain.decode("utf-8").replace("\r", ""))


def test_no_status_spinner_on_a_dumb_terminal(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "fadoctor", "snapshot", "--static", "-o",
                               str(tmp_path / "f.json")], stderr=follower, stdout=subprocess.PIPE,
                              env=base_environ(TERM="dumb"), timeout=120, check=False)
        os.close(follower)
        try:
            seen = os.read(leader, 65536)
        except OSError:
            seen = b""
    finally:
        os.close(leader)
    assert done.returncode == 0 and b"\x1b" not in seen


@pytest.mark.parametrize("case", ["facts", "facts-link", "matrix", "facts-dir-record"])
def test_an_output_that_is_one_of_the_inputs_is_refused(tmp_path: Path, case: str) -> None:
    facts = tmp_path / "facts.json"
    shutil.copy(FIXTURE, facts)
    args, target = ["check", "--facts", str(facts)], facts
    if case == "facts-link":  # another name for the same file: os.path.samefile
        target = tmp_path / "link.json"
        target.symlink_to(facts)
    elif case == "matrix":
        target = tmp_path / "matrix.yaml"
        shutil.copy(Path(__file__).resolve().parents[2] / "data" / "compat_matrix.yaml", target)
        args += ["--matrix", str(target)]
    elif case == "facts-dir-record":
        rank = Path(__file__).resolve().parents[1] / "fixtures" / "ranks" / "rank-cpu.json"
        (tmp_path / "ranks").mkdir()
        target = tmp_path / "ranks" / "rank-00000.json"
        shutil.copy(rank, target)
        args = ["check", "--facts-dir", str(tmp_path / "ranks")]
    before = target.read_bytes()
    done = fadoctor(*args, "-o", str(target))
    err = done.err.decode()
    assert done.code == 2, err
    assert err.startswith("fadoctor: error: --output ") and "this command read" in err, err
    assert len(err.splitlines()) == 1, err
    assert target.read_bytes() == before  # the input is intact
