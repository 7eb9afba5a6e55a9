"""Build resources read from what people write: a machine frozen by a source build, a build that
never ends, a reporter who found that fewer MAX_JOBS pass; the package being built is the one
the remedies name, and a training run that freezes is not a build."""

from __future__ import annotations

from typing import List

from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding
from fadoctor.triage.diagnose import triage


def _said(finding: Finding) -> str:
    return " ".join(c for r in finding.remedies for c in [r.summary, *r.commands])


def _top(text: str, matrix: Matrix) -> Finding:
    found: List[Finding] = triage(text, matrix).diagnosis
    assert found, text
    return found[0]


# each written for this test, in the words such reports use
def test_a_source_build_freezing_the_machine_is_memory_for_that_package(matrix: Matrix) -> None:
    top = _top("Building xformers from source freezes my whole computer.\n", matrix)
    assert top.category == Category.BUILD_RESOURCES
    said = _said(top)
    assert "MAX_JOBS=" in said and "pip install xformers" in said
    assert "--only-binary=xformers" in said and "flash-attn" not in said


def test_a_build_that_never_ends_names_the_prebuilt_wheel(matrix: Matrix) -> None:
    top = _top("flash_attn is always building, why?\n", matrix)
    assert top.category == Category.BUILD_RESOURCES
    assert "prebuilt" in _said(top) and "ninja" in _said(top)


def test_fewer_jobs_passing_is_memory(matrix: Matrix) -> None:
    text = ("MAX_JOBS=4 pip install flash-attn --no-build-isolation works.\n"
            "MAX_JOBS=16 pip install flash-attn --no-build-isolation raises errors.\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_RESOURCES
    assert "MAX_JOBS=" in _said(top)


def test_top_showing_no_free_memory_beside_an_install_is_memory(matrix: Matrix) -> None:
    text = ("pip install flash-attn --no-build-isolation fails\n"
            "MiB Mem : 128686.2 total,    571.3 free, 128028.8 used,     86.1 buff/cache\n")
    assert _top(text, matrix).category == Category.BUILD_RESOURCES


def test_a_training_run_that_freezes_is_not_a_build(matrix: Matrix) -> None:
    text = ("I installed it with pip install flash-attn --no-build-isolation.\n"
            "Training with attn_implementation=flash_attention_2 freezes after 10 steps.\n")
    assert all(d.category != Category.BUILD_RESOURCES for d in triage(text, matrix).diagnosis)


def test_the_pinned_xformers_release_accepts_the_stated_torch(matrix: Matrix) -> None:
    top = _top("torch 2.5.1\nBuilding wheel for xformers (setup.py) ... \nKilled\n", matrix)
    assert top.category == Category.BUILD_RESOURCES
    assert "xformers==0.0.29.post1 --only-binary=xformers" in _said(top)


# Not a build: kept here with the other prose-read findings of this change.
def test_an_asserted_availability_flag_is_a_hidden_import_failure(matrix: Matrix) -> None:
    # written for this test, in the shape of a video model's guarded import and its assert
    said = ("  File \"wan/modules/attention.py\", line 112, in flash_attention\n"
            "    assert FLASH_ATTN_2_AVAILABLE\nAssertionError\n")
    assert _top(said, matrix).category == Category.NOT_INSTALLED
    listed = _top("flash-attn 2.7.4.post1\ntorch 2.6.0\n" + said, matrix)
    assert listed.category == Category.TORCH_VERSION_MISMATCH
    assert "import flash_attn, flash_attn_2_cuda" in _said(listed)


def test_a_compile_said_to_take_a_lot_of_ram_is_memory(matrix: Matrix) -> None:
    text = "impossible to compile it (a lot of RAM): around 260GB with every core\n"
    assert _top(text, matrix).category == Category.BUILD_RESOURCES


def test_missing_cudnn_headers_name_cudnn_path(matrix: Matrix) -> None:
    text = ("torch/include/ATen/cudnn/cudnn-wrapper.h:3:10: fatal error: cudnn.h: No such file "
            "or directory\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_TOOLCHAIN and "CUDNN_PATH" in _said(top)
    assert "nvcc" not in top.message


def test_an_arch_typed_in_lower_case_names_the_nvcc_that_knows_it(matrix: Matrix) -> None:
    top = _top("nvcc fatal unsupported gpu architecture 'compute_86'\n", matrix)
    assert top.category == Category.BUILD_TOOLCHAIN and "nvcc 11.1" in top.message


def test_no_torch_in_a_traceback_through_setup_py_is_isolation(matrix: Matrix) -> None:
    # written for this test, in the shape of pip's unpacked sdist folder on Windows
    text = ('File "C:\\Users\\u\\AppData\\Local\\Temp\\pip-install-7czi\\flash-attn_6da8\\setup.py",'
            ' line 19, in <module>\n          import torch\n'
            "      ModuleNotFoundError: No module named 'torch'\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_ISOLATION and "--no-build-isolation" in _said(top)


def test_a_source_build_said_to_download_its_own_torch_is_isolation(matrix: Matrix) -> None:
    text = ("How to change the torch version when building vllm from source?\n"
            "When `pip install -e .`, the building process automatically downloads and installs "
            "`torch == 2.1.2`.\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_ISOLATION
    assert "pip install -e . --no-build-isolation" in _said(top) and "flash-attn" not in _said(top)
