"""Unknown is a value: a check whose input the facts leave unknown (None) is skipped, and says
what it needed; the same facts with the input known still pass or fail as before."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Dict

import pytest

from fadoctor.checks import BY_KEY
from fadoctor.checks.base import Skip
from fadoctor.facts.model import Facts, FlashAttention, Probe
from fadoctor.matrix import Matrix
from fadoctor.report import Severity

SITE = "/opt/venv/lib/python3.11/site-packages"
CU12 = "5.0;6.0;7.0;7.5;8.0;8.6;9.0"


def a100(build: ModuleType) -> Facts:
    """An A100 box with torch 2.6 cu124 that sees its GPU."""
    card = build.gpu("NVIDIA A100-SXM4-80GB", "8.0")
    return build.facts(
        build.host(), build.packages(build.dist("torch", "2.6.0+cu124", SITE)),
        build.driver("550.54.15", "12.4", [card]),
        build.torch("2.6.0+cu124", "12.4", CU12, [card], site=SITE,
                    sdpa_backends=build.sdpa("2.6.0")))


def with_torch(facts: Facts, **fields: Any) -> Facts:
    assert facts.torch.data is not None
    torch = facts.torch.data.model_copy(update=fields)
    return facts.model_copy(update={"torch": Probe.success(torch)})


def skip_reason(check_id: str, facts: Facts, matrix: Matrix) -> str:
    outcome = BY_KEY[check_id].run(facts, matrix)
    assert isinstance(outcome, Skip), outcome
    return outcome.reason


def worst(check_id: str, facts: Facts, matrix: Matrix) -> Severity:
    outcome = BY_KEY[check_id].run(facts, matrix)
    assert not isinstance(outcome, Skip), outcome.reason
    return max((f.severity for f in outcome), key=lambda s: s.rank)


UNKNOWN: Dict[str, Dict[str, Any]] = {
    "FAD105": {"cuda_available": None},
    "FAD106": {"arch_list": None},
    "FAD120": {"cuda_available": None},
}


@pytest.mark.parametrize("check_id", sorted(UNKNOWN))
def test_an_unknown_torch_fact_skips_the_check_and_says_so(
        check_id: str, build: ModuleType, matrix: Matrix) -> None:
    known = a100(build)
    assert worst(check_id, known, matrix) == Severity.INFO
    reason = skip_reason(check_id, with_torch(known, **UNKNOWN[check_id]), matrix)
    assert "unknown" in reason and "do not report" in reason


def test_torch_sees_no_gpu_fails_but_not_knowing_whether_it_does_skips(
        build: ModuleType, matrix: Matrix) -> None:
    known = with_torch(a100(build), cuda_available=False, devices=[], device_count=0)
    assert worst("FAD105", known, matrix) == Severity.ERROR
    unknown = with_torch(known, cuda_available=None, devices=None, device_count=None)
    assert "torch.cuda.is_available()" in skip_reason("FAD105", unknown, matrix)


def test_an_unreported_sdpa_report_skips_with_its_own_reason(
        build: ModuleType, matrix: Matrix) -> None:
    facts = with_torch(a100(build), sdpa=None)
    assert "SDPA backend report, which is unknown" in skip_reason("FAD120", facts, matrix)
    failed = with_torch(a100(build), sdpa=None, sdpa_error="crash: died")
    assert "which failed: crash: died" in skip_reason("FAD120", failed, matrix)


def test_unknown_installs_skip_the_installed_check(build: ModuleType, matrix: Matrix) -> None:
    facts = a100(build)
    unknown = [FlashAttention(family=fa.family) for fa in facts.flash_attention]
    assert all(fa.installed is None for fa in unknown)
    reason = skip_reason("FAD110", facts.model_copy(update={"flash_attention": unknown}), matrix)
    assert "flash-attention families are installed" in reason


def test_a_driver_that_does_not_list_its_gpus_is_not_a_driver_without_gpus(
        build: ModuleType, matrix: Matrix) -> None:
    facts = a100(build)
    assert facts.driver.data is not None
    procfs = facts.driver.data.model_copy(update={"source": "procfs", "gpus": None})
    findings = BY_KEY["FAD101"].run(facts.model_copy(update={"driver": Probe.success(procfs)}),
                                    matrix)
    assert not isinstance(findings, Skip)
    assert [f.severity for f in findings] == [Severity.INFO]
    nvml_none = facts.driver.data.model_copy(update={"gpus": []})
    findings = BY_KEY["FAD101"].run(facts.model_copy(update={"driver": Probe.success(nvml_none)}),
                                    matrix)
    assert not isinstance(findings, Skip) and findings[0].severity == Severity.ERROR
