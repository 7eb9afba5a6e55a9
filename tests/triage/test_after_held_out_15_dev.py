"""Mechanisms taken up from held_out_15's development half, each from its source: ptxas refusing
a target or an instruction, the memory-efficient kernels' FATAL guard, FlashInfer's version
skew, wheels whose local tags name another torch, a question about a torch a package's release
supports, a module quoted with backticks, and GPUs named in the plural."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.gpus import GpuFinder


def _said(found: object) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in found.remedies)  # type: ignore


def _top(text: str, matrix: Matrix) -> object:
    return triage(text, matrix).diagnosis[0]


def test_tritons_bundled_ptxas_older_than_the_gpu(matrix: Matrix) -> None:
    text = ("triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
            "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'\n"
            "Repro command: /e/site-packages/triton/backends/nvidia/bin/ptxas --gpu-name=sm_121a\n"
            "GPU: DGX Spark\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_TOOLCHAIN  # type: ignore[attr-defined]
    assert "export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas" in _said(top)


def test_nvccs_own_target_error_is_not_tritons(matrix: Matrix) -> None:
    text = "nvcc fatal   : Value 'sm_120' is not defined for option 'gpu-architecture'\n"
    assert not [d for d in triage(text, matrix).diagnosis if "TRITON_PTXAS_PATH" in _said(d)]


def test_an_arch_specific_instruction_for_another_target_is_the_arch_list(matrix: Matrix) -> None:
    text = ("Building for my RTX 5090 with TORCH_CUDA_ARCH_LIST=\"9.0;12.0\":\n"
            "ptxas error: Instruction 'wgmma.fence' not supported on .target 'sm_120'\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_TOOLCHAIN  # type: ignore[attr-defined]
    assert "only sm_90a (Hopper) has" in top.message  # type: ignore[attr-defined]
    assert "TORCH_CUDA_ARCH_LIST=12.0 python -m pip install" in _said(top)


def test_a_kernel_built_for_an_older_arch_rebuilds_for_every_gpu(matrix: Matrix) -> None:
    text = ("I built xformers on four 2080s and now added four 3090s:\n"
            "FATAL: kernel fmha_cutlassF_f16_aligned_64x128_rf_sm80 is for sm80-sm100, but was "
            "built for sm75.\n")
    top = _top(text, matrix)
    assert top.category == Category.NO_KERNEL_IMAGE  # type: ignore[attr-defined]
    assert 'TORCH_CUDA_ARCH_LIST="7.5 8.6" python -m pip install -v' in _said(top)


def test_a_kernel_whose_range_ends_below_the_gpu_is_the_release(matrix: Matrix) -> None:
    text = ("FATAL: kernel `fmha_cutlassF_f32_aligned_64x64_rf_sm80` is for sm80-sm100, but was "
            "built for sm121\n")
    top = _top(text, matrix)
    assert "predate the GPU" in top.message  # type: ignore[attr-defined]
    assert "PyTorch" in _said(top)


def test_flashinfer_cubin_skew_names_the_matching_release(matrix: Matrix) -> None:
    text = ("RuntimeError: flashinfer-cubin version (0.6.13) does not match flashinfer version "
            "(0.6.14). Please install the same version of both packages.\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT  # type: ignore[attr-defined]
    assert "flashinfer-cubin 0.6.14" in _said(top)
    assert "pip uninstall -y flashinfer-cubin" in _said(top)


def test_wheels_tagged_for_another_torch_get_the_installed_torchs_folder(matrix: Matrix) -> None:
    text = ("pip3 install torch==2.6.0 --index-url https://idx.example/whl/cu126\n"
            "pip install flashinfer-python -i https://fi.example/whl/cu124/torch2.5/\n"
            "ERROR: Cannot install flashinfer-python==0.2.5+cu124torch2.5 because these package "
            "versions have conflicting dependencies.\n")
    top = _top(text, matrix)
    assert top.category == Category.WRONG_WHEEL  # type: ignore[attr-defined]
    assert "-i https://fi.example/whl/cu126/torch2.6/" in _said(top)


def test_the_same_torch_as_the_tags_is_not_this_cause(matrix: Matrix) -> None:
    text = ("torch 2.5.1\nERROR: Cannot install flashinfer-python==0.2.5+cu124torch2.5 because "
            "these package versions have conflicting dependencies.\n")
    assert not [d for d in triage(text, matrix).diagnosis if "+cu124torch2.5 tags" in d.message]


def test_a_question_about_a_torch_gets_the_release_built_for_it(matrix: Matrix) -> None:
    text = ("We need pytorch 2.7.1, but the latest xformers only supports pytorch 2.7.0. When "
            "will 2.7.1 be supported?\n")
    top = _top(text, matrix)
    assert top.category == Category.VERSION_CONFLICT  # type: ignore[attr-defined]
    assert "xformers==0.0.31" in _said(top)


@pytest.mark.parametrize("quote", ["`", "\u2018"])
def test_a_module_quoted_as_a_page_renders_it(quote: str, matrix: Matrix) -> None:
    close = "`" if quote == "`" else "\u2019"
    top = _top(f"No module named {quote}rotary_emb{close}\n", matrix)
    assert "csrc/rotary" in top.message  # type: ignore[attr-defined]


@pytest.mark.parametrize("line, name", [("on H200s (sm90)", "H200"), ("eight A100s", "A100"),
                                        ("my 4090s", "GeForce RTX 4090"),
                                        ("a 1660S", "GeForce GTX 1660 SUPER")])
def test_gpus_in_the_plural(line: str, name: str, matrix: Matrix) -> None:
    assert GpuFinder(matrix).names(line)[0][0] == name


def test_a_decade_is_not_a_gpu(matrix: Matrix) -> None:
    assert GpuFinder(matrix).names("back in the 1990s") == []
