"""The distribution a failing compiled module belongs to, from its path: a package directory
under site-packages names it even when no table lists it; the CUDA library wheels' folder never
does (it holds what is loaded, not what loads)."""

from __future__ import annotations

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.mech_symbols import owner_of


def test_a_package_directory_names_its_distribution() -> None:
    assert owner_of("/v/lib/python3.12/site-packages/tensorrt_llm/bindings.cpython-312-x86_64-"
                    "linux-gnu.so") == "tensorrt-llm"


def test_listed_and_flash_attention_binaries_keep_their_owner() -> None:
    assert owner_of("/v/site-packages/xformers/_C.so") == "xformers"
    assert owner_of("/v/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so") is None
    assert owner_of("/v/site-packages/nvidia/cu13/lib/libnvrtc.so.13") is None


def test_an_unlisted_packages_undefined_torch_symbol_names_it(matrix: Matrix) -> None:
    found = top("    from tensorrt_llm.bindings import DataType\nImportError: /v/lib/python3.12/"
                "site-packages/tensorrt_llm/bindings.cpython-312-x86_64-linux-gnu.so: undefined "
                "symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs\n", matrix)
    assert found.category == Category.TORCH_VERSION_MISMATCH
    assert "tensorrt-llm" in said(found) and "flash-attn" not in said(found)


def test_a_package_named_torch_something_is_not_torch() -> None:
    assert owner_of("/usr/local/lib/python3.10/dist-packages/torch_scatter/_version_cuda.so") \
        == "torch-scatter"
    assert owner_of("/v/site-packages/torch/lib/libtorch_cpu.so") is None
