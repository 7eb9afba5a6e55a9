"""The fault suite's tools: target environments made by hand in a temporary folder, the examined
environment fingerprinted around every run, real `python -m fadoctor` processes, and the promises
every output keeps (inert text, well-formed JUnit, remedies a shell reads as their words)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence

from fadoctor.safety.shell import is_safe

FORMATS = ("text", "json", "junit", "markdown", "github")


class Run(NamedTuple):
    code: int
    out: bytes
    err: bytes

    @property
    def text(self) -> str:
        return self.out.decode("utf-8")  # every output is UTF-8, whatever the target held


def base_environ(**extra: str) -> Dict[str, str]:
    """This test run's environment without an active venv or conda env, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    env.update(extra)
    return env


def fadoctor(*args: str, env: Optional[Mapping[str, str]] = None, stdout: Any = subprocess.PIPE,
             stderr: Any = subprocess.PIPE, timeout: float = 300) -> Run:
    """`python -m fadoctor args` as a user runs it (undecodable bytes travel in str as
    surrogate escapes, as os.fsdecode gives them)."""
    done = subprocess.run([sys.executable, "-m", "fadoctor", *args], env=env or base_environ(),
                          stdout=stdout, stderr=stderr, timeout=timeout, check=False)
    return Run(done.returncode, done.stdout or b"", done.stderr or b"")


def fingerprint(*roots: Path) -> str:
    """Every file and folder under `roots`: path, mode, size and modification time, and the bytes
    of files under 1 MB (a write changes the time; small files are hashed besides)."""
    digest = hashlib.sha256()
    for root in roots:
        for folder, dirs, files in os.walk(os.fsencode(root)):
            dirs.sort()
            for name in sorted(files) + dirs:
                path = os.path.join(folder, name)
                st = os.lstat(path)
                digest.update(b"%s %o %d %d\n" % (path, st.st_mode, st.st_size, st.st_mtime_ns))
                if os.path.isfile(path) and not os.path.islink(path) and st.st_size < 1 << 20:
                    with open(path, "rb") as fh:
                        digest.update(fh.read())
    return digest.hexdigest()


@contextmanager
def unchanged(*roots: Path) -> Iterator[None]:
    """Fail unless nothing under `roots` changed in the block (the examined environment)."""
    before = fingerprint(*roots)
    yield
    assert fingerprint(*roots) == before, f"fadoctor changed the examined environment {roots}"


def examined(site: Path) -> List[Path]:
    """What a run against this interpreter with `site` on PYTHONPATH examines."""
    return [site, Path(sys.prefix)]


def dist_info(site: Path, folder: str, metadata: bytes, files: Optional[Mapping[str, bytes]] = None
              ) -> None:
    """A distribution written by hand, as an installer other than pip could leave it: a
    `folder` (…dist-info) holding `metadata` verbatim, and `files` beside it."""
    info = site / folder
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_bytes(metadata)
    (info / "INSTALLER").write_bytes(b"hand\n")
    for rel, body in (files or {}).items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)


CONTROL = {*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)} - {0x09, 0x0A}


def assert_inert(text: str) -> None:
    """No control character (ESC, BEL, CR, C1…), bidi override or lone surrogate survives."""
    bad = sorted({hex(ord(ch)) for ch in text if ord(ch) in CONTROL or 0xD800 <= ord(ch) <= 0xDFFF
                  or ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"})
    assert not bad, f"raw control characters in the output: {bad}"


def assert_error_line(run: Run, code: int, *words: str) -> None:
    """Exit `code`, and stderr is exactly one `fadoctor: error:` line naming the problem (an
    invalid file's further problems each on an indented line below it)."""
    err = run.err.decode("utf-8")
    assert run.code == code, (run.code, err)
    head, *rest = err.splitlines()
    assert head.startswith("fadoctor: error: "), err
    assert all(line.startswith("  ") for line in rest), err
    assert_inert(err)
    for word in words:
        assert word in err, (word, err)


def leaves_a_trace(line: str, sandbox: Path) -> bool:
    """Whether a real /bin/sh, given `line` as the words of `set --` (so the command itself never
    runs), runs anything that leaves a file in the empty folder `sandbox`. Its PATH holds only
    `touch`, the program the hostile values call: an injected `rm -rf ~` finds no rm."""
    sandbox.mkdir(parents=True, exist_ok=True)
    tools = sandbox.parent / f"{sandbox.name}-bin"
    if not tools.is_dir():
        tools.mkdir()
        (tools / "touch").symlink_to(shutil.which("touch") or "/usr/bin/touch")
    subprocess.run(["/bin/sh", "-c", "set -- " + line], cwd=sandbox, env={"PATH": str(tools)},
                   capture_output=True, timeout=30, check=False)
    return list(sandbox.iterdir()) != []


def assert_harmless(commands: Sequence[str], sandbox: Path) -> None:
    """Each command is in the form fadoctor.safety.shell writes, and a real shell given it runs nothing
    that leaves a trace."""
    for line in commands:
        assert is_safe(line), line
        assert "pwned" not in line, f"a hostile value reached a command: {line!r}"
        assert not leaves_a_trace(line, sandbox), f"{line!r} did something"


def commands_of(report: Mapping[str, object]) -> List[str]:
    checks = report["checks"]
    assert isinstance(checks, list)
    return [c for check in checks for f in check["findings"] for r in f["remedies"]
            for c in r["commands"]]


def assert_every_format_holds(facts: Path, sandbox: Path) -> Dict[str, str]:
    """`check --facts` in every format: exit 0 or 1, nothing on stderr, inert UTF-8 output,
    JUnit that parses, Markdown without markup from the target, harmless commands."""
    outputs = {}
    for fmt in FORMATS:
        run = fadoctor("check", "--facts", str(facts), "--format", fmt)
        assert run.code in (0, 1), run
        assert run.err == b"", run.err
        assert_inert(run.text)
        outputs[fmt] = run.text
    ET.fromstring(outputs["junit"].encode("utf-8"))
    prose = re.sub(r"(?ms)^ *(`{3,}).*?^ *\1$", "", outputs["markdown"]).replace("<br>", "")
    assert not re.search(r"<[A-Za-z/!?]", prose), "markup from the target in the Markdown"
    for line in outputs["github"].splitlines():
        assert line.startswith(("::error ", "::warning ", "fadoctor: ")), line
    assert_harmless(commands_of(json.loads(outputs["json"])), sandbox)
    return outputs
