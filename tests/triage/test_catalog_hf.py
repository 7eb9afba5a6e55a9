"""transformers' flash-attention messages (hf-NNN), read from its release wheels: every recorded
message at every release is catalogued, each printed form gets its category and a remedy that
names the fix, and `fadoctor triage` (a real child process) reads written reports with them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest
import yaml
from packaging.version import Version
from tests.triage.test_catalog import _tool

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.catalog_data import Entry
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_catalog import entries
from fadoctor.triage.model import Diagnosed

ROOT = Path(__file__).resolve().parents[2]
RECORDED = yaml.safe_load((ROOT / "tests" / "fixtures" / "hf_excerpts.yaml").read_text("utf-8"))
HF = [e for e in entries() if e.source == "hf"]
# A value for each fact a placeholder states, as transformers would print it.
VALUES = {"version": "2.0.8", "fa_generation": "2", "model_class": "LlamaForCausalLM",
          "dtype": "torch.float32", "compute_capability": "8", "version_min": "0.19.1",
          "version_max": "0.20.0", "value": "cuda"}
# What each category's remedy must name: the package, the flag, the dtype or the device.
FIX = {Category.NOT_INSTALLED: ("kernels", "flash-attn", "hopper", "flash-attn-4",
                                "USE_HUB_KERNELS=YES"),
       Category.PLATFORM_UNSUPPORTED: ('attn_implementation="sdpa"',),
       Category.VERSION_CONFLICT: ("kernels", "flash-attn>="),
       Category.DTYPE_UNSUPPORTED: ("torch_dtype=torch.bfloat16",),
       Category.NO_GPU: ('device_map="cuda"', "torch.cuda.is_available()"),
       Category.GPU_UNSUPPORTED: ('attn_implementation="flash_attention_2"',),
       Category.TORCH_VERSION_MISMATCH: ("torch >= 2.1.1",)}


def _example(entry: Entry) -> str:
    facts: Dict[str, str] = dict(entry.captures)
    return re.sub(r"\{(\w+)\}", lambda m: VALUES[facts[m.group(1)]], entry.printed)


def _said(top: Diagnosed) -> str:
    remedies = top.remedies
    return " ".join([r.summary for r in remedies] + [c for r in remedies for c in r.commands]
                    + [r.code or "" for r in remedies])


def test_the_wheels_read_are_every_release_from_4_34() -> None:
    tags = RECORDED["tags"]
    assert tags[0] == "4.34.0" and len(tags) >= 120
    assert tags == sorted(tags, key=Version)
    assert {"4.36.2", "4.57.6", "5.0.0"} <= set(tags)


def test_every_recorded_message_at_every_release_is_catalogued() -> None:
    by_text = {e.printed: e for e in HF}
    missing = []
    for path, line, printed, runs in RECORDED["rows"]:
        entry = by_text.get(printed)
        for tag in _tool("message_extract").tags_in_runs(RECORDED["tags"], runs):
            if entry is None or not Version(entry.first) <= Version(tag) <= Version(entry.last):
                missing.append(f"{tag}:{path}:{line}: {printed}")
    assert missing == []
    assert len(HF) >= 50


@pytest.mark.parametrize("entry", [e for e in HF if e.weight != "defer"],
                         ids=[e.id for e in HF if e.weight != "defer"])
def test_each_printed_form_gets_its_category_and_names_the_fix(entry: Entry,
                                                               matrix: Matrix) -> None:
    text = f"GPU 0: NVIDIA A100-SXM4-80GB\nValueError: {_example(entry)}\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == entry.category and top.evidence["quoted"]
    # another release's wording of the same check may match the same text (a placeholder where
    # this one has a literal, or advice the patterns leave out): same category either way
    matched = next(e for e in HF if e.id == top.evidence["catalog"])
    assert matched.category == entry.category and matched.pattern.search(_example(entry))
    assert any(word in _said(top) for word in FIX[entry.category]), _said(top)


@pytest.mark.parametrize("entry", [e for e in HF if e.weight == "defer"],
                         ids=[e.id for e in HF if e.weight == "defer"])
def test_flash_attn_missing_defers_to_the_hand_mechanism(entry: Entry, matrix: Matrix) -> None:
    """Not installed where transformers runs, or installed (pip list) with an import that fails."""
    alone = triage(f"ImportError: {_example(entry)}\n", matrix).diagnosis[0]
    assert alone.category == Category.NOT_INSTALLED and "flash-attn" in _said(alone)
    listed = triage(f"flash-attn                2.7.4.post1\nImportError: {_example(entry)}\n",
                    matrix).diagnosis[0]
    # the import that fails hides its error; most often a binary built for another torch
    assert listed.category == Category.TORCH_VERSION_MISMATCH
    assert "import flash_attn, flash_attn_2_cuda" in _said(listed) and "--no-cache-dir" in _said(listed)


def test_failed_import_ranks_below_the_import_error_it_wraps(matrix: Matrix) -> None:
    """4.54's "Failed to import flash attention 2" is raised from `except ImportError`: the
    undefined symbol above it is the cause."""
    [entry] = [e for e in HF if e.weight == "wrapped"]
    text = ("ImportError: /venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-"
            "linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n\nDuring handling of the "
            f"above exception, another exception occurred:\n\nImportError: {entry.printed}\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    alone = triage(f"ImportError: {entry.printed}\n", matrix).diagnosis[0]
    assert alone.category == Category.NOT_INSTALLED
    assert "import flash_attn, flash_attn_2_cuda" in _said(alone)


def test_kernels_remedy_is_the_requirement_of_the_stated_release(matrix: Matrix) -> None:
    text = ("transformers              4.54.1\nValueError: kernels is not installed. Please "
            "install it with `pip install kernels`.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED
    assert any("kernels>=0.6.1,<0.7" in c for r in top.remedies for c in r.commands)


def test_flash_attn_floor_is_the_one_the_message_names(matrix: Matrix) -> None:
    text = ("ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the "
            "following error: you need flash_attn package version to be greater or equal than "
            "2.1.0. Detected version 2.0.8. Please refer to the documentation\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    commands = [c for r in top.remedies for c in r.commands]
    assert any("flash-attn>=2.1.0" in c for c in commands), commands
    assert top.evidence["captures"]["flash_attention_version"].startswith("2.0.8")


# Written for these tests (not copied from an issue thread): what a user pastes after loading a
# model with attn_implementation="flash_attention_3" on an A100, with transformers 4.55.4.
WRITTEN_FA3 = (
    "$ python train.py\ntransformers              4.55.4\ntorch                     2.7.1+cu126\n"
    "GPU 0: NVIDIA A100-SXM4-80GB\nTraceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.11/site-packages/transformers/modeling_utils.py", line 2514, '
    "in _flash_attn_3_can_dispatch\nValueError: FlashAttention3 has been toggled on, but it cannot "
    "be used due to the following error: Flash Attention 3 requires compute capability >= 9.0, "
    "but found (8, 0) with compute capability 8.0.\n")
# Written for these tests: a model loaded without a dtype on a machine with a GPU.
WRITTEN_DTYPE = (
    "transformers 4.46.3, torch 2.5.1+cu124, GPU 0: NVIDIA GeForce RTX 4090\n"
    "Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current "
    "dype in Qwen2ForCausalLM is torch.float32. You should run training or inference using "
    "Automatic Mixed-Precision\nRuntimeError: FlashAttention only support fp16 and bf16 data type\n")


def _triage_cli(report: str) -> str:
    done = subprocess.run([sys.executable, "-m", "fadoctor", "triage", "-"], input=report,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stderr
    return done.stdout


def test_fa3_on_an_a100_through_the_command() -> None:
    out = _triage_cli(WRITTEN_FA3)
    assert "1. ✗ gpu_unsupported" in out
    assert "transformers' flash-attention check" in out
    assert 'attn_implementation="flash_attention_2"' in out


def test_float32_model_through_the_command() -> None:
    out = _triage_cli(WRITTEN_DTYPE)
    assert "1. ✗ dtype_unsupported" in out
    assert "torch_dtype=torch.bfloat16" in out
