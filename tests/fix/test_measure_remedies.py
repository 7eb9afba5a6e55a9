"""tools/measure_remedies.py on its cheapest scenario (a distribution installed twice, no torch):
the remedy `check` prints, pasted in a shell where the examined environment is not active, runs
and takes its finding away."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
TOOL = Path(__file__).resolve().parents[2] / "tools" / "measure_remedies.py"


def test_the_duplicate_remedy_pasted_as_printed_fixes_its_finding(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    done = subprocess.run([sys.executable, str(TOOL), "installed-twice", "--no-torch",
                           "--work", str(tmp_path / "work"), "--out", str(out)],
                          capture_output=True, text=True, timeout=1500, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    [result] = json.loads(out.read_text(encoding="utf-8"))["results"]
    [tried] = [t for t in result["tries"] if t["check"] == "FAD107" and t["subject"] == "einops"]
    assert tried["commands"] and all(" -m pip " in c for c in tried["commands"])
    assert tried["ran"] and tried["fixed"] and not tried["new"], tried
