"""Another package's compiled extension missing while the package imports: apex installed
without --cuda_ext/--cpp_ext (the module names of its setup.py), mamba-ssm and causal-conv1d
without their CUDA extension; and the setup.py NameError that means no nvcc was found."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


@pytest.mark.parametrize("module, option", [("fused_layer_norm_cuda", "APEX_CUDA_EXT=1"),
                                            ("amp_C", "APEX_CUDA_EXT=1"),
                                            ("apex_C", "APEX_CPP_EXT=1")])
def test_apex_without_its_extensions(module: str, option: str, matrix: Matrix) -> None:
    text = (f'  File "/opt/conda/lib/python3.10/site-packages/apex/normalization/fused_layer_norm.py'
            f'", line 20, in __init__\nModuleNotFoundError: No module named \'{module}\'\n')
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED and module in top.message
    assert option in top.message
    commands = [c for r in top.remedies for c in r.commands]
    assert "git clone https://github.com/NVIDIA/apex" in commands
    assert any(c.startswith("APEX_CPP_EXT=1 APEX_CUDA_EXT=1 ") and c.endswith(
        "pip install -v --no-build-isolation --no-cache-dir .") for c in commands)


def test_mamba_without_its_extension(matrix: Matrix) -> None:
    text = "import selective_scan_cuda\nModuleNotFoundError: No module named 'selective_scan_cuda'\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED and "mamba-ssm" in top.message
    assert any("--no-build-isolation" in c and c.endswith("mamba-ssm")
               for r in top.remedies for c in r.commands)


def test_flash_attn_module_is_not_taken_for_apex(matrix: Matrix) -> None:
    text = "ModuleNotFoundError: No module named 'flash_attn_2_cuda'\nflash_attn 2.5.8\n"
    assert "apex" not in triage(text, matrix).diagnosis[0].message


@pytest.mark.parametrize("package, expected", [("mamba-ssm", "prebuilt mamba-ssm wheel"),
                                               ("flash-attn", "fadoctor fix --print-pins")])
def test_setup_py_name_error_means_no_nvcc(package: str, expected: str, matrix: Matrix) -> None:
    text = (f"pip install --no-build-isolation {package}\n  File \"setup.py\", line 180, in "
            "<module>\n    if bare_metal_version >= Version(\"11.8\"):\n"
            "NameError: name 'bare_metal_version' is not defined\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_TOOLCHAIN and "no CUDA compiler" in top.message
    said = " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)
    assert "CUDA_HOME" in said and expected in said
