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


def test_a_numpy_alias_removed_in_1_24(matrix: Matrix) -> None:
    found = top("AttributeError: module 'numpy' has no attribute 'int'.\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert 'numpy<1.24' in " ".join(c for r in found.remedies for c in r.commands)


def test_a_numpy_name_removed_in_2_0_carries_numpys_note(matrix: Matrix) -> None:
    found = top("AttributeError: `np.float_` was removed in the NumPy 2.0 release.\n"
                "AttributeError: module 'numpy' has no attribute 'float_'\n", matrix)
    assert 'numpy<2.0' in " ".join(c for r in found.remedies for c in r.commands)
    assert "np.float64" in said(found)


def test_a_module_compiled_for_numpy_1_under_numpy_2(matrix: Matrix) -> None:
    found = top("A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.1.3 as it "
                "may crash.\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert 'numpy<2' in " ".join(c for r in found.remedies for c in r.commands)


def test_torchs_numpy_bridge_without_numpy(matrix: Matrix) -> None:
    found = top("UserWarning: Failed to initialize NumPy: No module named 'numpy'\n"
                "RuntimeError: Numpy is not available\n", matrix)
    assert found.category == Category.NOT_INSTALLED


def test_an_unlisted_numpy_attribute_is_left_to_the_generic_skew(matrix: Matrix) -> None:
    from fadoctor.triage.mech_numpy import expired
    assert "float" in expired()["1.24.0"] and "NaN" in expired()["2.0.0"]
    found = top("AttributeError: module 'numpy' has no attribute 'definitely_not_numpy'\n", matrix)
    assert "removed np." not in found.message  # no release table names it
    assert "numpy" in found.message
