"""`fix --verify` on a real broken environment built here: a distribution installed twice (an old
`pip install --target` folder on sys.path through a .pth file). check finds it; its remedy,
proven in a throwaway copy, takes the finding away; the target's files stay byte-identical."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Dict

import pytest
from tests.helpers.broken import requires_torch

from fadoctor.cli.verify import check_copy
from fadoctor.fix.verify import render_verified, run_line, verify
from fadoctor.install.into import installer_of
from fadoctor.safety.shell import into

pytestmark = pytest.mark.slow


def _hashes(root: Path) -> Dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()
            and "__pycache__" not in p.parts}


def _site(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                          "['purelib'])"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


@pytest.fixture(scope="module")
def twice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """einops in site-packages and again in an old --target folder that a .pth puts on sys.path."""
    env = tmp_path_factory.mktemp("twice") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, capture_output=True)
    python = env / "bin" / "python"
    site = _site(python)
    for extra in ([], ["--target", str(site / "old_target")]):
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "einops",
                        *extra], check=True, capture_output=True)
    (site / "old-target.pth").write_text("old_target\n", encoding="utf-8")
    return python


def test_the_duplicate_remedy_is_proven_and_the_target_unchanged(twice: Path) -> None:
    from fadoctor.collect.run import Collection
    from fadoctor.collect.target import CollectOptions
    from fadoctor.evaluate import evaluate
    from fadoctor.matrix import load_matrix

    facts = Collection(CollectOptions(python=str(twice))).facts()
    before = evaluate(facts, load_matrix())
    [finding] = [f for c in before.checks if c.id == "FAD107" for f in c.findings
                 if f.subject == "einops"]
    installer = installer_of(facts)
    # The remedy runs the examined interpreter's pip, never a bare one.
    assert all(c.startswith(f"{twice} -m pip ") for c in finding.remedies[0].commands)
    raw = [c.replace(f"{twice} -m pip", "pip", 1) for c in finding.remedies[0].commands]
    root = twice.parents[1]
    hashes = _hashes(root)
    done = verify(str(twice), installer, lambda mine: [into(c, mine) for c in raw], check_copy,
                  before, timeout=300)
    assert done.commands_ok, render_verified(done)
    assert any(g.startswith("FAD107") and "einops" in g for g in done.gone), render_verified(done)
    assert done.proven and done.torch_before == done.torch_after
    assert _hashes(root) == hashes  # the target's files, byte for byte


def test_a_failing_command_is_shown_with_its_output(tmp_path: Path) -> None:
    ran = run_line(f"{sys.executable} -c 'import sys; sys.exit(3)'", tmp_path, 30)
    assert ran.returncode == 3
    slow = run_line(f"{sys.executable} -c 'import time; time.sleep(5)'", tmp_path, 0.5)
    assert slow.returncode is None and "ran past" in slow.tail


@requires_torch
def test_verify_holds_the_copy_against_a_full_check_of_the_target(tmp_path: Path) -> None:
    """`fix` reads torch statically; --verify used to hold those facts against a full check of
    the copy, and said torch moved (2.13.0+cpu 'from its files' -> 2.13.0+cpu) and called the
    findings only a full check makes new. The plan's install fails at once here (no pip in the
    env, no index): nothing moved, nothing new."""
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    purelib = _site(env / "bin" / "python")
    (purelib / "torch_here.pth").write_text(sysconfig.get_paths()["purelib"] + "\n",
                                            encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "fadoctor", "fix", "--python",
                           str(env / "bin" / "python"), "--verify"], capture_output=True,
                          text=True, timeout=900, env={**os.environ, "PIP_NO_INDEX": "1"})
    assert done.returncode == 1, done.stdout + done.stderr  # its install cannot run here
    assert "torch unmoved" in done.stdout and "  new: " not in done.stdout, done.stdout
