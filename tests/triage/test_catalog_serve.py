"""The serving frameworks' flash-attention messages (vLLM, SGLang, sgl-kernel) and
nvidia-cutlass-dsl's modules in the catalog: every recorded message and module at every release
is catalogued with a range holding it, and triage names the fix (the reports here are written
for these tests, not copied from issue threads)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from packaging.version import Version
from tests.triage.test_catalog import _tool

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_catalog import entries

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("project,releases", [("vllm", 80), ("sglang", 92), ("sgl-kernel", 64)])
def test_every_serving_message_at_every_release_is_catalogued(project: str, releases: int) -> None:
    serve = _tool("serve_sources")
    recorded = serve.load()[project]
    versions: List[str] = recorded["versions"]
    assert len(versions) == releases
    by_text = {e.printed: e for e in entries() if e.source == project}
    assert by_text
    for _, line, printed, how, runs in recorded["rows"]:
        entry = by_text[printed]
        assert entry.corroborates == (how == "log"), entry.id
        for version in serve.ex.tags_in_runs(versions, runs):
            assert Version(entry.first) <= Version(version) <= Version(entry.last), (version, line)


def test_every_varying_dsl_module_is_catalogued_with_the_releases_that_hold_it() -> None:
    dsl = _tool("cutlass_dsl_sources")
    recorded = dsl.load()
    assert len(recorded["versions"]) == 29 and recorded["versions"][-1] == "4.8.1"
    held: Dict[str, List[str]] = dsl.providers(recorded)
    by_module = {e.printed.split("'")[1]: e for e in entries()
                 if e.printed.startswith("No module named 'cutlass")}
    for module in dsl._varying(recorded):
        assert by_module[module].dsl_versions == tuple(held[module]), module
    # what flash_attn/cute imports is annotated too: cutlass.utils.gemm.sm100 from beta19
    sm100 = by_module["cutlass.utils.gemm.sm100"]
    assert sm100.source == "fa4-import" and sm100.dsl_versions[0] == "4.4.0.dev0"


def _remedy_text(result: object) -> str:
    top = result.diagnosis[0]  # type: ignore[attr-defined]
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)


def test_missing_dsl_module_names_the_dsl_release_the_installed_beta_pins(matrix: Matrix) -> None:
    """beta20 pins nvidia-cutlass-dsl==4.6.0.dev0 (its pyproject.toml); 4.2.1 lacks
    cutlass.utils.gemm.sm100 (from 4.4.0.dev0)."""
    text = ("flash-attn-4              4.0.0b20\nnvidia-cutlass-dsl        4.2.1\n"
            "GPU 0: NVIDIA B200\n  File \"flash_attn/cute/interface.py\", line 12, in <module>\n"
            "ModuleNotFoundError: No module named 'cutlass.utils.gemm.sm100'\n")
    result = triage(text, matrix)
    assert result.diagnosis[0].category == Category.VERSION_CONFLICT
    commands = [c for r in result.diagnosis[0].remedies for c in r.commands]
    # triage quotes a command for the shell only where it needs it
    assert commands[0] == "python -m pip install nvidia-cutlass-dsl==4.6.0.dev0"
    assert "4.2.1 is older than that pin" in _remedy_text(result)


def test_a_dsl_newer_than_an_exact_pin_is_called_newer(matrix: Matrix) -> None:
    text = ("flash-attn-4==4.0.0b22\nnvidia-cutlass-dsl==4.8.1\n"
            "ModuleNotFoundError: No module named 'cutlass.base_dsl.arch'\n")
    remedy = _remedy_text(triage(text, matrix))
    assert "4.8.1 is newer than that pin" in remedy and "nvidia-cutlass-dsl==4.6.0.dev0" in remedy


def test_vllm_volta_turing_log_alone_gets_another_backend(matrix: Matrix) -> None:
    text = ("GPU 0: Tesla T4\nINFO 05-02 10:11:12 selector.py:120] Cannot use FlashAttention-2 "
            "backend for Volta and Turing GPUs.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert top.remedies[0].commands == ["export VLLM_ATTENTION_BACKEND=XFORMERS"]


def test_vllm_fallback_log_does_not_outrank_the_named_error(matrix: Matrix) -> None:
    """vLLM logs the fallback and runs XFormers; the failure the report shows is another."""
    text = ("GPU 0: Tesla V100-SXM2-32GB\nINFO selector.py:120] Cannot use FlashAttention-2 "
            "backend for Volta and Turing GPUs.\nImportError: /usr/lib/python3/site-packages/"
            "xformers/_C.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    diagnosis = triage(text, matrix).diagnosis
    assert diagnosis[0].category != Category.GPU_UNSUPPORTED
    assert any(d.category == Category.GPU_UNSUPPORTED for d in diagnosis[1:])


def test_sglang_fa3_gate_on_turing_offers_triton(matrix: Matrix) -> None:
    text = ("GPU 0: NVIDIA GeForce RTX 2080 Ti\nAssertionError: FlashAttention v3 Backend requires "
            "SM>=80 and SM<=90. Please use `--attention-backend flashinfer`.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED
    assert "--attention-backend triton" in top.remedies[0].summary


WRITTEN = """\
$ python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --attention-backend fa3
GPU 0: NVIDIA A10G
[2026-01-05 09:12:44] Scheduler hit an exception: Traceback (most recent call last):
  File "sglang/srt/layers/attention/flashattention_backend.py", line 310, in forward_extend
NotImplementedError: flash_attn at sgl-kernel is only supported on sm90 and above
"""


def test_written_sglang_report_through_the_cli(tmp_path: Path) -> None:
    """A report written for this test (an A10G, sm_86, running SGLang's fa3 backend), through
    `fadoctor triage` as a child process."""
    report = tmp_path / "report.txt"
    report.write_text(WRITTEN, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "fadoctor", "triage", str(report)],
                          capture_output=True, text=True, timeout=120)
    assert "gpu_unsupported" in done.stdout.splitlines()[next(
        i for i, line in enumerate(done.stdout.splitlines()) if line.startswith("1."))]
    assert "sgl-kernel" in done.stdout and "--attention-backend triton" in done.stdout


def test_missing_cutlass_names_the_requirement_the_stated_beta_declares(matrix: Matrix) -> None:
    text = "flash-attn-4==4.0.0b16\nModuleNotFoundError: No module named 'cutlass'\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED
    # flash_attn/cute/pyproject.toml at fa4-v4.0.0.beta16: nvidia-cutlass-dsl>=4.5.2
    assert top.remedies[0].commands == ['python -m pip install "nvidia-cutlass-dsl>=4.5.2"']
