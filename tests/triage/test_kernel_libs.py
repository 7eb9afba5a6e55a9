"""The attention-kernel libraries beside flash-attention (data/kernel_libraries.yaml): each
release's arch list against the GPU a report names decides between the release that has kernels
for it, a build for it, and another backend; a head dim SageAttention refuses is that."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage import ext_torch
from fadoctor.triage.diagnose import triage
from fadoctor.triage.kernel_libs import _ITEM, covers, libraries

_MLA = ("CUDA error (/tmp_code/FlashMLA/csrc/flash_fwd_mla_kernel.h:678): no kernel image is "
        "available for execution on the device\n")
_CUTLASS = "RuntimeError: cutlassF: no kernel found to launch!\n"


def _said(found: object) -> str:
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in found.remedies)  # type: ignore


def _top(text: str, matrix: Matrix) -> object:
    return triage(text, matrix).diagnosis[0]


def test_every_row_is_cited_and_every_arch_parses() -> None:
    libs = libraries()
    assert set(libs) == {"flashmla", "flashinfer-trtllm-gen", "flashinfer", "xformers",
                         "sageattention"}
    for lib in libs.values():
        assert lib.instead and lib.names
        for row in lib.releases:
            assert re.search(r"\w/\w[\w-]*@\w", row.where), row.where  # owner/repo@ref
            for item in (*(row.wheels or ()), *(row.builds or ()), *row.refuses,
                         *(i for _, more in row.cuda for i in more)):
                assert _ITEM.fullmatch(item), item
        if not lib.dated:
            assert [Version(r.since) for r in lib.releases] == sorted(
                Version(r.since) for r in lib.releases)


@pytest.mark.parametrize("item, cc, runs", [
    ("9.0a", "9.0", True), ("9.0a", "10.0", False), ("8.0+PTX", "8.6", True),
    ("8.0+PTX", "9.0", False),  # PTX of an older major holds no kernel for the newer one
    ("10.0f", "10.3", True), ("10.0f", "12.0", False), ("7.5", "7.5", True), ("8.0", "7.5", False)])
def test_an_arch_item_covers_its_own_major_only(item: str, cc: str, runs: bool) -> None:
    assert covers(item, Version(cc)) is runs


def test_flashmla_without_a_gpu_named_is_hopper_and_blackwell_only(matrix: Matrix) -> None:
    top = _top(_MLA, matrix)
    assert top.category == Category.GPU_UNSUPPORTED  # type: ignore[attr-defined]
    assert "sm_90a" in top.message and "FlashMLA" in top.message  # type: ignore[attr-defined]
    assert "flash-attn" not in _said(top) and "Hopper" in _said(top)


def test_flashmla_on_an_ampere_gpu_has_no_release(matrix: Matrix) -> None:
    top = _top(f"GPU: NVIDIA A100-SXM4-80GB\n{_MLA}", matrix)
    assert top.message.startswith("no release of FlashMLA has kernels for A100")  # type: ignore


def test_flashmla_on_a_hopper_gpu_is_not_blamed_on_its_arch(matrix: Matrix) -> None:
    found = triage(f"GPU: NVIDIA H100 80GB HBM3\n{_MLA}", matrix).diagnosis
    assert not [d for d in found if "FlashMLA" in d.message]


def test_old_xformers_wheels_lack_hopper(matrix: Matrix) -> None:
    text = f"{_CUTLASS}GPU: NVIDIA H100 80GB HBM3\nxformers==0.0.20\ntorch==2.0.1+cu118\n"
    top = _top(text, matrix)
    assert top.category == Category.NO_KERNEL_IMAGE  # type: ignore[attr-defined]
    assert "0.0.20's prebuilt wheels carry kernels for" in top.message  # type: ignore
    said = _said(top)
    assert "xFormers 0.0.21 is the first release" in said and "CUDA 11.8 or newer" in said
    assert "TORCH_CUDA_ARCH_LIST=9.0" in said and "xformers.git@v0.0.20" in said
    pin = re.search(r"xformers==([\w.]+)", said)
    assert pin is not None and pin.group(1) in ext_torch.table()["xformers"]  # a real release
    required = ext_torch.table()["xformers"][pin.group(1)]
    assert "2.0.1" in required  # one that keeps the installed torch


def test_the_xformers_release_unstated_names_the_first_with_kernels(matrix: Matrix) -> None:
    top = _top(f"[BUG] {_CUTLASS.strip()} with H100GPU\n", matrix)
    assert "before 0.0.21 carry no kernels for H100 (sm_90)" in top.message  # type: ignore


def test_xformers_with_hopper_wheels_is_not_this_cause(matrix: Matrix) -> None:
    text = f"{_CUTLASS}GPU: NVIDIA H100 80GB HBM3\nxformers==0.0.22\ntorch==2.0.1+cu118\n"
    assert not [d for d in triage(text, matrix).diagnosis if d.subject == "kernel_library"]


def test_flashinfer_wheels_before_016_lack_turing(matrix: Matrix) -> None:
    text = ("Can't use sglang with flashinfer on sm_75, it crashes\nGPU 0: Tesla T4\n"
            "flashinfer: 0.1.3\n")
    top = _top(text, matrix)
    assert top.category == Category.NO_KERNEL_IMAGE  # type: ignore[attr-defined]
    assert "FlashInfer 0.1.6 is the first release" in _said(top)
    assert "pip install" not in _said(top)  # its early wheels are on its own index only


def test_flashinfer_on_volta_has_no_release(matrix: Matrix) -> None:
    top = _top("flashinfer fails on my Tesla V100 with a CUDA error\n", matrix)
    assert top.category == Category.GPU_UNSUPPORTED  # type: ignore[attr-defined]
    assert "no release of FlashInfer has kernels for" in top.message  # type: ignore
    assert "sm_75" in _said(top)


def test_sageattention_1_on_blackwell_needs_2_1_1(matrix: Matrix) -> None:
    text = ("PassManager::run failed on 5090RTX Ubuntu\nHappens when i set to use sageattention\n"
            "sageattention: 1.0.6\n")
    top = _top(text, matrix)
    assert top.category == Category.GPU_UNSUPPORTED  # type: ignore[attr-defined]
    assert "not usable on GeForce RTX 5090 (sm_120)" in top.message  # type: ignore
    assert "SageAttention 2.1.1 is the first release" in _said(top)


@pytest.mark.parametrize("line, dim", [("ValueError: Unsupported head_dim: 512", "512"),
                                       ("WanVideoImageClipEncode Unsupported head_dim: 384", "384")])
def test_sageattention_refuses_heads_above_128(line: str, dim: str, matrix: Matrix) -> None:
    top = _top(f"{line}\n", matrix)
    assert top.category == Category.HEAD_DIM_UNSUPPORTED  # type: ignore[attr-defined]
    assert f"head_dim is {dim}" in top.message and "up to 128" in top.message  # type: ignore
    assert "SDPA" in _said(top)


def test_a_library_named_beside_a_gpu_it_supports_says_nothing(matrix: Matrix) -> None:
    text = "GPU 0: NVIDIA GeForce RTX 4090\nxformers 0.0.28 crashes with an error\n"
    assert not [d for d in triage(text, matrix).diagnosis if d.subject == "kernel_library"]


def test_flashinfers_floor_on_a_newer_gpu_is_the_arch_list(matrix: Matrix) -> None:
    text = ("Build on L20 failed: RuntimeError: FlashInfer requires sm75+\n"
            "GPU 0: NVIDIA L40S\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_TOOLCHAIN  # type: ignore[attr-defined]
    assert "TORCH_CUDA_ARCH_LIST=8.9 python -m pip install -e . --no-build-isolation" in _said(top)


def test_flashinfers_floor_on_an_older_gpu_is_the_gpu(matrix: Matrix) -> None:
    top = _top("RuntimeError: FlashInfer requires GPUs with sm75 or higher\nTesla V100\n", matrix)
    assert top.category == Category.GPU_UNSUPPORTED  # type: ignore[attr-defined]
    assert "no release of FlashInfer has kernels for" in top.message  # type: ignore[attr-defined]
