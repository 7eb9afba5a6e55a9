"""An environment with no pip (made by uv): fadoctor sees it is uv-made, its remedies say
`uv pip … --python <its python>`, and such a command, run as printed, installs into it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fadoctor.fix.apply import freeze
from fadoctor.fix.verify import run_line
from fadoctor.install.into import installer_of
from fadoctor.safety.shell import into

pytestmark = pytest.mark.slow
UV = shutil.which("uv") or str(Path(sys.executable).parent / "uv")


@pytest.mark.skipif(not Path(UV).exists(), reason="uv is not installed (the [test] extra has it)")
def test_a_uv_made_environment_gets_uv_commands_that_work(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from fadoctor.collect.run import Collection
    from fadoctor.collect.target import CollectOptions

    env = tmp_path / "env"
    subprocess.run([UV, "venv", "-q", "--python", sys.executable, str(env)], check=True,
                   capture_output=True, timeout=120)
    python = str(env / "bin" / "python")
    subprocess.run([UV, "pip", "install", "-q", "--python", python, "packaging"], check=True,
                   capture_output=True, timeout=300)
    facts = Collection(CollectOptions(python=python, static=True)).facts()
    installer = installer_of(facts)
    assert installer.python == python and not installer.pip  # no pip in it; uv installed it
    line = into("pip install --no-deps einops", installer)
    assert line == f"uv pip install --python {python} --no-deps einops"
    monkeypatch.setenv("PATH", f"{Path(UV).parent}:{os.environ.get('PATH', '')}")
    ran = run_line(line, tmp_path, 300)
    assert ran.returncode == 0, ran.tail
    assert "einops" in freeze(python) and "pip" not in freeze(python)


def test_a_traceback_through_a_user_site_names_no_interpreter() -> None:
    # ~/.local/lib/python3.10/site-packages is the user site of a system python: its prefix has
    # no bin/python, so remedies keep `python -m pip`
    from fadoctor.install.into import named_in
    assert named_in("/home/u/.local/lib/python3.10/site-packages/flash_attn/__init__.py") is None
    venv = named_in("/opt/venv/lib/python3.10/site-packages/flash_attn/__init__.py")
    assert venv is not None and venv.python == "/opt/venv/bin/python"
