"""`fadoctor triage` and `--redact` as users run them: real `python -m fadoctor` processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, NamedTuple, Optional

import pytest

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "cases"
PLANTED_USER = "plantedperson"
PLANTED_TOKEN = "hf_PlantedSecretValue0123456789"


class Run(NamedTuple):
    code: int
    out: str
    err: str


def fadoctor(*args: str, stdin: Optional[bytes] = None, env: Optional[Dict[str, str]] = None
             ) -> Run:
    done = subprocess.run([sys.executable, "-m", "fadoctor", *args], input=stdin,
                          capture_output=True, env=env, timeout=300, check=False)
    return Run(done.returncode, done.stdout.decode("utf-8", "replace"),
               done.stderr.decode("utf-8", "replace"))


def test_reads_a_file_and_exits_1_on_a_certain_cause() -> None:
    run = fadoctor("triage", str(CASES / "fa762-quadro-rtx5000-turing" / "report.txt"))
    assert run.code == 1, run.err
    assert run.out.startswith("fadoctor triage: ")
    assert "1. ✗ gpu_unsupported" in run.out
    assert "line 10: RuntimeError: FlashAttention only supports Ampere GPUs or newer." in run.out


def test_reads_stdin_and_prints_json_in_rank_order() -> None:
    report = (CASES / "vllm3912-not-found-masks-undefined-symbol" / "report.txt").read_bytes()
    run = fadoctor("triage", "-", "--format", "json", stdin=report)
    data = json.loads(run.out)
    assert [d["rank"] for d in data["diagnosis"]] == list(range(1, len(data["diagnosis"]) + 1))
    top = data["diagnosis"][0]
    assert top["category"] == "torch_version_mismatch"
    assert {"severity", "category", "message", "evidence", "remedies", "why_ranked"} <= set(top)
    assert top["evidence"]["quoted"]


def test_thin_text_exits_0_and_names_the_commands() -> None:
    run = fadoctor("triage", "-", stdin=b"flash-attn is broken on my machine, any idea?")
    assert run.code == 0, run.err
    assert "python -m torch.utils.collect_env" in run.out
    assert "fadoctor snapshot --redact -o -" in run.out


def test_markdown_keeps_the_pasted_text_inert() -> None:
    """Quoted lines sit in a fence they cannot close; everything else is escaped."""
    run = fadoctor("triage", "-", "-f", "markdown",
                   stdin=b"GPU: Tesla T4 | <script>\n```\nOS: Ubuntu [click](https://e.x/a) `c`"
                         b" \x1b]0;pwned\x07\nRuntimeError: FlashAttention only supports "
                         b"Ampere GPUs or newer. <b> [x](https://e.x/b) ```` `y`\n")
    assert run.out.startswith("## fadoctor triage:")
    fence, outside = None, []
    for line in run.out.splitlines():
        stripped = line.strip()
        if stripped.startswith("```") and (fence is None or stripped == fence):
            fence = None if fence else stripped
        elif fence is None:
            outside.append(line)
    assert fence is None
    prose = "\n".join(outside)
    assert "<script>" not in prose and "<b>" not in prose
    pasted = [ln for ln in outside if "e.x/" in ln]  # lines outside a fence that quote it
    assert pasted
    for line in pasted:  # no link, no code span from the text: their characters are escaped
        assert "](" not in line.replace("\\](", "") and re.search(r"(?<!\\)`", line) is None
    assert "\x1b" not in run.out and "\x07" not in run.out  # escape sequences shown escaped
    assert "Ubuntu" in prose and "[x](https://e.x/b)" in run.out  # ...and the text still shown


@pytest.mark.parametrize("args, words", [
    (("triage", "/nonexistent/report.txt"), ("cannot read", "/nonexistent/report.txt")),
    (("triage", "-", "--format", "yaml"), ("yaml",)),
])
def test_bad_input_is_one_line_and_exit_2(args: tuple, words: tuple) -> None:  # type: ignore[type-arg]
    run = fadoctor(*args, stdin=b"")
    assert run.code == 2 and run.out == ""
    assert "Traceback" not in run.err
    for word in words:
        assert word in run.err


@pytest.fixture
def planted(tmp_path: Path) -> Dict[str, str]:
    """An interpreter under a planted user's home, and a planted secret in the environment."""
    home = tmp_path / "home" / PLANTED_USER
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "python").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    # The token in a variable whose name does not say so: only its value gives it away.
    env.update(HOME=str(home), USER=PLANTED_USER, PYTORCH_PLANTED_HUB=PLANTED_TOKEN)
    return {"python": str(home / "bin" / "python"), "dir": str(tmp_path), **env}


def _environ(planted: Dict[str, str]) -> Dict[str, str]:
    return {k: v for k, v in planted.items() if k not in ("python", "dir")}


def test_planted_names_and_secrets_appear_in_no_redacted_output(planted: Dict[str, str]) -> None:
    env, python, facts = _environ(planted), planted["python"], Path(planted["dir"]) / "facts.json"
    plain = fadoctor("snapshot", "--static", "--python", python, "-o", str(facts), env=env)
    assert plain.code == 0, plain.err
    unredacted = facts.read_text(encoding="utf-8")  # the plants are really there to remove
    assert PLANTED_USER in unredacted and PLANTED_TOKEN in unredacted
    outputs = {"snapshot": fadoctor("snapshot", "--static", "--redact", "--python", python,
                                    "-o", "-", env=env).out}
    for fmt in ("text", "json", "junit", "markdown", "github"):
        run = fadoctor("check", "--facts", str(facts), "--redact", "-f", fmt, "-v", env=env)
        assert run.out, run.err
        outputs[f"check {fmt}"] = run.out
    report = f"{PLANTED_USER}@box:~$ python -c 'import flash_attn'\n{unredacted}"
    for fmt in ("text", "json", "markdown"):
        outputs[f"triage {fmt}"] = fadoctor("triage", "-", "--redact", "-f", fmt, "-v",
                                            stdin=report.encode(), env=env).out
    for name, out in outputs.items():
        assert out.strip(), name
        assert PLANTED_USER not in out, name
        assert PLANTED_TOKEN not in out, name
    json.loads(outputs["snapshot"])  # still a facts file


def test_paste_this_hints_run_pip_through_the_environment_s_python() -> None:
    # A bare `pip` lists whatever environment PATH finds first, not necessarily the one
    # that failed: every hint runs the tool through `python -m`, as the others already do.
    run = fadoctor("triage", "-", "--format", "json", stdin=b"it crashes somewhere\n")
    commands = [m["command"] for m in json.loads(run.out)["missing"]]
    assert any("-m pip list" in c for c in commands), commands
    assert not any(re.match(r"(.*[|;&] *)?pip3? ", c) for c in commands), commands
    assert all(c.startswith(("python ", "fadoctor ", "nvidia-smi")) for c in commands), commands
