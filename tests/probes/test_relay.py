"""The relay: fadoctor's runner run by path in the target interpreter, for the rank agent — the
stages it asks for, crash-isolated, and the attention smoke tests in their lanes, as `check`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from tests.helpers.broken import SEGFAULT, environ_with_path, fake_module_dist, requires_torch

from fadoctor.in_target.registry import names
from fadoctor.probes import relay
from fadoctor.probes.kernels import KernelOptions
from fadoctor.probes.kernels import assemble as kernel_facts
from fadoctor.probes.runner import StageFailure, StageOutcome

RELAY = Path(relay.__file__).resolve()


def run_relay(request: Dict[str, Any]) -> Dict[str, Any]:
    done = subprocess.run([sys.executable, "-B", str(RELAY)], input=json.dumps(request),
                          capture_output=True, text=True, timeout=300, check=True)
    answer: Dict[str, Any] = json.loads(done.stdout)
    return answer


@requires_torch  # the fa2 stage imports torch before the family
def test_the_relay_runs_stages_past_a_crash(tmp_path: Path) -> None:
    site = fake_module_dist(tmp_path / "site", "flash-attn", "2.6.3", "flash_attn", SEGFAULT)
    answer = run_relay({"stages": ["host", "fa2", "packages"], "timeouts": {},
                        "env": environ_with_path(site)})
    assert answer["host"]["ok"] and answer["packages"]["ok"]
    assert answer["fa2"]["failure"]["kind"] == "crash"
    assert answer["fa2"]["failure"]["signal"] == "SIGSEGV"


@requires_torch
@pytest.mark.slow
def test_the_relay_runs_the_smoke_tests_in_their_lanes() -> None:
    # CPU torch: the smoke stages run, find no CUDA device, and say so.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    answer = run_relay({"kernels": "default", "timeouts": {}, "env": env})
    assert set(answer) == set(names(groups=("smoke",)))
    outcomes = {stage: StageOutcome(stage, o["ok"], data=o["data"], seconds=o["seconds"],
                                    failure=StageFailure(**o["failure"]) if o["failure"] else None)
                for stage, o in answer.items()}
    smoke = kernel_facts(outcomes, KernelOptions(smoke="default"))["smoke"]
    assert set(smoke.targets) == {"sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math",
                                  "fa2", "fa3", "fa4", "vllm_fa"}
    flash = smoke.targets["sdpa_flash"].data
    assert flash is not None and flash.skipped == "CUDA is not available to torch"


def test_a_malformed_kernel_record_is_a_failure_that_says_so() -> None:
    """One rule for every stage's record (fadoctor.facts.model.probe_of), the kernel stages' too: a
    record that does not validate becomes a failed probe naming the stage, never a traceback."""
    bad = StageOutcome("smoke_sdpa_math", True, data={"target": "sdpa_math", "cases": "many"})
    died = StageOutcome("smoke_fa2", False, failure=StageFailure(kind="crash", reason="SIGSEGV"))
    run = kernel_facts({"smoke_sdpa_math": bad, "smoke_fa2": died},
                       KernelOptions(smoke="default"))["smoke"]
    math, fa2 = run.targets["sdpa_math"], run.targets["fa2"]
    assert not math.ok and math.failure.kind == "error"
    assert math.failure.reason.startswith("the worker's smoke_sdpa_math record is malformed")
    assert not fa2.ok and fa2.failure.kind == "crash" and fa2.failure.reason == "SIGSEGV"
