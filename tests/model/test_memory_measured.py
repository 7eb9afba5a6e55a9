"""The estimate against torch.cuda.max_memory_allocated measured on a real GPU: every case that
benchmarks/model_memory_gpu.py recorded (tests/fixtures/model_memory/*.json) within 10%."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from fadoctor.model.bench import estimate_case
from fadoctor.model.spec import read_config
from tests.helpers.model_configs import config_file

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "model_memory"


def recorded() -> List[Tuple[str, Dict[str, Any]]]:
    out = []
    for path in sorted(HERE.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            if case.get("status") == "ok" and not case.get("tiny"):
                out.append((f"{path.stem}:{case['case']['name']}", case))
    return out


CASES = recorded()


@pytest.mark.skipif(not CASES, reason="no GPU measurements recorded yet: run "
                    "benchmarks/model_memory_gpu.py on a GPU and copy its JSON to "
                    "tests/fixtures/model_memory/")
@pytest.mark.parametrize("case", [c for _, c in CASES] or [None], ids=[n for n, _ in CASES] or
                         ["none"])
def test_estimate_within_ten_percent_of_max_memory_allocated(case: Dict[str, Any]) -> None:
    cfg = read_config(config_file(case["case"]["config"]))
    predicted = estimate_case(cfg, case["case"])["peak_allocated_bytes"]
    measured = case["max_memory_allocated"]
    assert predicted == pytest.approx(measured, rel=0.10), (predicted, measured)
