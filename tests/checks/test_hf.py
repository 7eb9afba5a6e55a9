"""FAD121 over recorded facts: how each kind of transformers decision is judged (the decisions
themselves come from real transformers releases in tests/in_target/test_hf_attention.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from fadoctor.checks import BY_KEY
from fadoctor.checks.base import Skip
from fadoctor.facts.files import loads
from fadoctor.facts.model import Facts, Failure, FailureKind, Probe
from fadoctor.facts.transformers import TransformersAttention
from fadoctor.matrix import Matrix
from fadoctor.report import Finding

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "facts"
FA2_MISSING = ("ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the "
               "following error: the package flash_attn seems to be not installed.")


def load_facts(path: Path) -> Facts:
    return loads(path.read_text(encoding="utf-8"), str(path))


def _with(name: str, **record: Any) -> Facts:
    facts = load_facts(FIXTURES / f"{name}.json")
    data = TransformersAttention.model_validate({"installed": True, "version": "5.0.0", **record})
    return facts.model_copy(update={"transformers": Probe.success(data)})


def _run(facts: Facts, matrix: Matrix) -> Dict[str, Finding]:
    outcome = BY_KEY["FAD121"].run(facts, matrix)
    assert not isinstance(outcome, Skip), outcome
    return {f.subject or "": f for f in outcome}


def test_runs_falls_back_and_fails_are_told_apart(matrix: Matrix) -> None:
    decisions: List[Dict[str, Any]] = [
        {"requested": "sdpa", "resolved": "sdpa"},
        {"requested": "flash_attention_2", "error": [FA2_MISSING]},
        {"requested": "flash_attention_3", "resolved": "kernels-community/vllm-flash-attn3",
         "hub_kernels": ["kernels-community/vllm-flash-attn3"]},
    ]
    found = _run(_with("h100-torch211-cu130-no-fa", decisions=decisions), matrix)
    assert found["sdpa"].severity == "info" and found["sdpa"].message.endswith("runs sdpa")
    # flash-attn is not installed here: its refusal is information, with transformers' words.
    assert found["flash_attention_2"].severity == "info"
    assert found["flash_attention_2"].message.endswith(f"fails with: {FA2_MISSING}")
    fa3 = found["flash_attention_3"]
    assert fa3.severity == "warning" and "falls back to kernels-community/vllm-flash-attn3" in \
        fa3.message and "downloads and runs that kernel's code" in fa3.message


def test_an_installed_family_that_transformers_refuses_is_an_error(matrix: Matrix) -> None:
    facts = _with("b200-fa2-2.7.0", decisions=[
        {"requested": "flash_attention_2", "error": ["ImportError: FlashAttention2 requires "
                                                     "at least version `2.3.3`."]},
        {"requested": "sdpa", "error": ["ValueError: does not support sdpa"]}])
    found = _run(facts, matrix)
    assert facts.flash_attention[0].installed
    assert found["flash_attention_2"].severity == "error"
    assert found["sdpa"].severity == "error" and found["sdpa"].remedies


def test_unknown_and_absent_are_skips(matrix: Matrix) -> None:
    facts = load_facts(FIXTURES / "h100-torch211-cu130-no-fa.json")
    outcome = BY_KEY["FAD121"].run(facts, matrix)
    assert isinstance(outcome, Skip) and "do not hold" in outcome.reason
    absent = facts.model_copy(update={"transformers": Probe.success(
        TransformersAttention(installed=False))})
    outcome = BY_KEY["FAD121"].run(absent, matrix)
    assert isinstance(outcome, Skip) and "not installed" in outcome.reason
    crashed = facts.model_copy(update={"transformers": Probe.failed(Failure(
        kind=FailureKind.CRASH, reason="SIGSEGV while importing transformers"))})
    outcome = BY_KEY["FAD121"].run(crashed, matrix)
    assert isinstance(outcome, Skip) and "SIGSEGV" in outcome.reason
