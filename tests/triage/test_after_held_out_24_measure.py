"""Mechanisms added after held_out_24's held-out half was measured (labelled: its figure before
them is the one reported), each on a text written for the test."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category


def test_setup_pys_cutlass_guard_means_an_archive_without_submodules(matrix: Matrix) -> None:
    found = top("AssertionError: csrc/cutlass is missing, please use source distribution or git "
                "clone\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert any("git clone --recursive" in c for r in found.remedies for c in r.commands)


def test_torch_six_removed_names_the_caller(matrix: Matrix) -> None:
    found = top("  File \"/env/lib/python3.10/site-packages/deepspeed/runtime/utils.py\", line 19\n"
                "    from torch._six import inf\nModuleNotFoundError: No module named 'torch._six'\n",
                matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "torch 2.0 removed torch._six" in found.message
    assert "pip install --upgrade deepspeed" in " ".join(c for r in found.remedies for c in r.commands)


def test_apex_gets_no_command_for_the_index_namesake(matrix: Matrix) -> None:
    found = top("NVIDIA apex: ImportError: cannot import name 'container_abcs' from 'torch._six'\n",
                matrix)
    assert "no longer has container_abcs" in found.message
    assert not any("install --upgrade apex" in c for r in found.remedies for c in r.commands)


def test_setuptools_70_dropped_pkg_resources_packaging(matrix: Matrix) -> None:
    found = top("ImportError: cannot import name 'packaging' from 'pkg_resources' "
                "(/env/lib/python3.10/site-packages/pkg_resources/__init__.py)\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert 'setuptools<70' in " ".join(c for r in found.remedies for c in r.commands)


def test_a_misspelt_xformers_triton_notice_is_still_info(matrix: Matrix) -> None:
    found = top("A matching Triton is not available, some optimizations wilt not be enabled.\n"
                "Error caught was: No module named 'triton'\n", matrix)
    assert found.category == Category.INFO


def test_a_cuda_build_on_rocm(matrix: Matrix) -> None:
    found = top("AMD ROCm 6.2 on Linux\nRuntimeError: Cannot find CUDA_HOME. CUDA must be "
                "available to build the package.\n", matrix)
    assert found.category == Category.ROCM


def test_a_cuda_11_ptxas_on_cuda_12_ptx_is_the_toolkit(matrix: Matrix) -> None:
    found = top("ptxas kernel.ptx, line 5; fatal   : Unsupported .version 8.4; current version is "
                "'7.8'\n", matrix)
    assert found.category == Category.BUILD_TOOLCHAIN
    assert "CUDA 12 toolkit's ptxas" in said(found)


def test_vllms_head_size_list(matrix: Matrix) -> None:
    found = top("vllm/attention/ops/paged_attn.py\nRuntimeError: Unsupported head size: 48\n",
                matrix)
    assert found.category == Category.HEAD_DIM_UNSUPPORTED
    assert "48" in found.message and "VLLM_ATTENTION_BACKEND" in said(found)
