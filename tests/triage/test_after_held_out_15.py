"""Defects the held_out_15 run showed, fixed after its figure was taken: flash-attn 1.x's own GPU
floor (Turing), the setup.py CUDA floor of mamba-ssm and causal-conv1d, a program's warning that
it falls back without flash-attn, an Apple-silicon Mac named "Mac M2", a package with nothing
for Windows, and running on the CPU."""

from __future__ import annotations

from packaging.version import Version

from fadoctor.facts.model import Family
from fadoctor.matrix import Matrix
from fadoctor.report import Category, Severity
from fadoctor.triage.diagnose import triage


def _said(found: object) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in found.remedies)  # type: ignore


def test_flash_attn_1_runs_on_turing(matrix: Matrix) -> None:
    text = "flash-attn 1.0.7\nGPU : NVIDIA GeForce RTX 2080 Ti\ntorch 1.13.1+cu117\n"
    found = triage(text, matrix).diagnosis
    assert not [d for d in found if d.category == Category.GPU_UNSUPPORTED]
    support = matrix.family_support(Family.FA2)
    assert support.floor(Version("1.0.7")) == Version("7.5")
    assert support.floor(Version("2.8.3")) == Version("8.0")


def test_flash_attn_2_still_refuses_turing(matrix: Matrix) -> None:
    text = "flash-attn 2.5.8\nGPU : NVIDIA GeForce RTX 2080 Ti\ntorch 2.3.0+cu121\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED


def test_causal_conv1ds_cuda_floor_is_the_nvcc_it_found(matrix: Matrix) -> None:
    text = ("  \u00d7 python setup.py egg_info did not run successfully.\n"
            "      RuntimeError: causal_conv1d is only supported on CUDA 11.6 and above.  Note: "
            "make sure nvcc has a supported version by running nvcc -V.\n"
            "      torch.__version__  = 2.1.0+cu121\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_TOOLCHAIN
    assert "causal-conv1d's setup.py" in top.message and "CUDA_HOME" in _said(top)


def test_a_programs_fallback_warning_is_harmless(matrix: Matrix) -> None:
    text = ("Warning: flash-attn is not installed. Will only run the manual PyTorch version. "
            "Please install flash-attn for faster inference.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.severity == Severity.INFO and "safe to ignore" in _said(top)


def test_prose_about_a_wrong_fallback_is_not_the_warning(matrix: Matrix) -> None:
    text = ("As a result, unsloth's detection logic fails for flash-attn, incorrectly concluding "
            "that flash-attn is not installed or is broken, and falls back to xformers.\n")
    assert not [d for d in triage(text, matrix).diagnosis if d.subject == "fallback_warning"]


def test_an_apple_silicon_mac_by_its_chip(matrix: Matrix) -> None:
    top = triage("xformers for silicon Mac M2\nthe install fails\n", matrix).diagnosis[0]
    assert top.category == Category.PLATFORM_UNSUPPORTED and "macOS" in top.message


def test_nothing_for_windows_is_linux_only(matrix: Matrix) -> None:
    text = ("Requirement already satisfied: torch in c:\\users\\me\\python311\\lib\\site-packages\n"
            "ERROR: Could not find a version that satisfies the requirement triton (from "
            "mamba-ssm) (from versions: none)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.PLATFORM_UNSUPPORTED
    assert top.message.startswith("triton has no Windows wheel")
    assert "wsl --install" in _said(top) and "triton-windows" in _said(top)


def test_the_same_message_on_linux_is_not_windows(matrix: Matrix) -> None:
    text = ("ERROR: Could not find a version that satisfies the requirement triton (from "
            "versions: none)\n/home/me/venv/lib/python3.11/site-packages\n")
    assert not [d for d in triage(text, matrix).diagnosis if "for Windows" in d.message]


def test_a_cpu_torch_also_offers_sdpa_on_the_cpu(matrix: Matrix) -> None:
    text = "import flash_attn\nAssertionError: Torch not compiled with CUDA enabled\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_CPU_ONLY and 'attn_implementation="sdpa"' in _said(top)
    assert "so no flash-attention" in top.message


def test_a_cpu_torch_with_no_attention_named_gets_no_attention_switch(matrix: Matrix) -> None:
    top = triage("AssertionError: Torch not compiled with CUDA enabled\n", matrix).diagnosis[0]
    assert top.category == Category.TORCH_CPU_ONLY
    assert "sdpa" not in _said(top).lower() and "flash" not in top.message
