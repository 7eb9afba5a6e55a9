"""The hooks where people train, run for real: a transformers Trainer with FadoctorCallback on a
tiny Llama model built from a local config (no download), one training step on the CPU; and the
one-liner for plain PyTorch / accelerate scripts on rank 0 and another rank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict

import pytest
from tests.helpers.hf_venvs import venv_with

pytestmark = pytest.mark.slow

SCRIPT = """
import json, logging, sys
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments
import fadoctor
from fadoctor.integrations import FadoctorCallback

config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                     num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
model = LlamaForCausalLM(config)
logging.basicConfig(level=logging.INFO)  # as a training script does: fadoctor logs at info
torch.manual_seed(0)
ids = torch.randint(0, 64, (4, 16))
data = [{"input_ids": row, "labels": row} for row in ids]
args = TrainingArguments(output_dir=sys.argv[1], max_steps=1, per_device_train_batch_size=2,
                         report_to=[], save_strategy="no", use_cpu=True, logging_steps=1)
callback = FadoctorCallback(**json.loads(sys.argv[2]))
trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[callback])
out = {}
try:
    trainer.train()
except fadoctor.PreflightError as exc:
    out["raised"] = [p.category.value for p in exc.problems]
out["steps"] = trainer.state.global_step
out["loss"] = [h["loss"] for h in trainer.state.log_history if "loss" in h]
out["checks"] = {c.id: c.status.value for c in callback.report.checks}
print("RESULT " + json.dumps(out))
"""


def _train(tmp_path: Path, options: Dict[str, Any]) -> Dict[str, Any]:
    python = venv_with("5.24.0")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID"):
        env.pop(name, None)
    done = subprocess.run([str(python), "-c", SCRIPT, str(tmp_path / "run"), json.dumps(options)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result: Dict[str, Any] = json.loads(line[len("RESULT "):])
    result["log"] = done.stderr
    return result


def test_the_callback_lets_a_healthy_run_take_its_step(tmp_path: Path) -> None:
    out = _train(tmp_path, {"kernels": "none", "only": ["FAD102", "FAD121"]})
    assert "raised" not in out
    assert out["steps"] == 1 and len(out["loss"]) == 1 and out["loss"][0] > 0
    assert out["checks"] == {"FAD102": "passed", "FAD121": "passed"}
    assert "fadoctor: 2 passed, 0 warning, 0 failed, 0 skipped" in out["log"]


def test_the_callback_stops_the_run_before_its_first_step_on_errors(tmp_path: Path) -> None:
    out = _train(tmp_path, {"kernels": "none"})
    assert "torch_cpu_only" in out["raised"]  # CPU torch 2.13.0: FAD103 fails
    assert out["steps"] == 0 and out["loss"] == []
    assert out["checks"]["FAD103"] == "failed"
    assert "FAD103 error: torch 2.13.0+cpu is a CPU-only build" in out["log"]


def test_stop_true_ends_the_run_without_an_exception(tmp_path: Path) -> None:
    out = _train(tmp_path, {"kernels": "none", "stop": True})
    assert "raised" not in out and out["steps"] <= 1
    assert "fadoctor: stopping the run" in out["log"]


ONE_LINER = """
import sys, fadoctor.integrations
try:
    report = fadoctor.integrations.preflight_on_rank0(kernels="none")
    print("report" if report is not None else "none")
except fadoctor.PreflightError as exc:
    print("raised", exc.report.summary.failed)
print(sorted(m for m in ("torch", "transformers") if m in sys.modules))
"""


@pytest.mark.parametrize(("rank", "expected"), [("0", "raised"), ("3", "none")])
def test_the_one_liner_runs_on_rank_0_only(rank: str, expected: str) -> None:
    env = {**os.environ, "RANK": rank}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(ONE_LINER)], capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    first, imported = done.stdout.splitlines()
    assert first.split()[0] == expected and imported == "[]"


def test_the_rank_comes_from_the_launchers_variables() -> None:
    from fadoctor.integrations import rank

    assert rank({}) == 0 and rank({"RANK": "5"}) == 5 and rank({"SLURM_PROCID": "2"}) == 2
    assert rank({"RANK": "x", "PMI_RANK": "1"}) == 1
