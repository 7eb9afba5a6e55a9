"""`fix --apply` / `--rollback` on a real environment built here: the rollback file is written
before anything runs, and rolling back restores the exact versions (by a real pip)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fadoctor.errors import InputError
from fadoctor.fix.apply import apply_plan, freeze, read_rollback, rollback_to
from fadoctor.safety.shell import Installer, command, into

pytestmark = pytest.mark.slow


def test_apply_then_rollback_restores_the_freeze(tmp_path: Path) -> None:
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, capture_output=True)
    python = str(env / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "einops"], check=True,
                   capture_output=True)
    before = freeze(python)
    assert "einops" in before
    inst = Installer(python=python, pip=True, known=True)
    file = tmp_path / "rollback.json"
    ran = apply_plan([into(command("pip", "uninstall", "-y", "einops"), inst)], inst, file,
                     lambda m: None)
    assert [r.returncode for r in ran] == [0] and "einops" not in freeze(python)
    saved = json.loads(file.read_text(encoding="utf-8"))
    assert saved["before"] == before and saved["python"] == python
    assert saved["restore"] == [f"{python} -m pip install --no-deps einops=={before['einops']}"]
    assert all(r.returncode == 0 for r in rollback_to(file, lambda m: None))
    assert freeze(python) == before


def test_a_file_that_is_not_a_rollback_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(InputError, match="cannot read it as a rollback file"):
        read_rollback(bad)
