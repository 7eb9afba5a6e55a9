"""The estimate against torch.cuda.max_memory_allocated measured on a real GPU: every case that
benchmarks/model_memory_gpu.py recorded (tests/fixtures/model_memory/*.json) within 10%, and the
activation terms against the bytes autograd saved there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from tests.helpers.model_configs import config_file

from fadoctor.model.bench import estimate_case
from fadoctor.model.spec import read_config

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


SAVED = [(n, c) for n, c in CASES if not c["case"].get("checkpointing")
         and c["steps"] and "saved_bytes" in c["steps"][0]]


@pytest.mark.skipif(not SAVED, reason="no GPU measurements of saved tensors recorded yet")
@pytest.mark.parametrize("case", [c for _, c in SAVED] or [None], ids=[n for n, _ in SAVED] or
                         ["none"])
def test_activation_terms_equal_what_autograd_saved_on_the_gpu(case: Dict[str, Any]) -> None:
    """Without checkpointing, the bytes the saved-tensor hooks counted in the first step (each
    storage once, parameters excluded) are the estimate's activation terms."""
    from fadoctor.model.bench import plan_of
    from fadoctor.model.estimate import activation_terms
    from fadoctor.model.spec import spec_from_config

    spec = spec_from_config(read_config(config_file(case["case"]["config"])), "model")
    _, _, saved = activation_terms(spec, plan_of(case["case"]))
    assert saved == pytest.approx(case["steps"][0]["saved_bytes"], rel=0.03)
