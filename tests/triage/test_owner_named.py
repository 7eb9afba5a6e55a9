"""The package a failure belongs to is the one the report names: a binary's path in the loader's
line (not the title that repeats the symbol), another package's "no kernel image" with no
flash-attention in sight; GPUs named by their number alone at the end of a sentence, or with an
S for SUPER; torch is offered only where torch's own builds may lack the GPU's code."""

from __future__ import annotations

from typing import List

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage

_SYMBOL = "_ZN3c106detail19maybe_wrap_dim_slowEllb"


def _said(text: str, matrix: Matrix) -> str:
    top = triage(text, matrix).diagnosis[0]
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)


def _commands(text: str, matrix: Matrix) -> List[str]:
    return [c for r in triage(text, matrix).diagnosis[0].remedies for c in r.commands]


def test_the_loader_line_names_the_owner_over_a_title(matrix: Matrix) -> None:
    text = (f"undefined symbol: {_SYMBOL}\n\nI get this error when I try to import.\n\n"
            f"/envs/py/lib/python3.10/site-packages/vllm/activation_ops.cpython-310-x86_64-linux-"
            f"gnu.so: undefined symbol: {_SYMBOL}\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    assert top.message.startswith("vllm:")
    said = _said(text, matrix)
    assert "flash-attn" not in said
    # no torch stated: pip check names the torch vllm's release pins, and no command moves torch
    assert "reinstall torch at the version vllm's release requires" in said
    assert "/envs/py/bin/python -m pip check" in _commands(text, matrix)  # that environment's pip


@pytest.mark.parametrize("line, name, sm", [
    ("Would love to use my 5090.", "GeForce RTX 5090", "sm_120"),
    ("Card is a 1660S", "GeForce GTX 1660 SUPER", "sm_75"),
    ("running on a 2070 Super", "GeForce RTX 2070 Super", "sm_75"),
])
def test_a_gpu_by_its_number_alone(line: str, name: str, sm: str, matrix: Matrix) -> None:
    text = f"RuntimeError: CUDA error: no kernel image is available for execution on the device\n{line}\n"
    top = triage(text, matrix).diagnosis[0]
    assert name in top.message and sm in top.message


@pytest.mark.parametrize("line", ["see line 3090.", "version 5090.1 of the package",
                                  "5090.0MiB used"])
def test_a_number_that_is_not_a_gpu(line: str, matrix: Matrix) -> None:
    text = f"RuntimeError: CUDA error: no kernel image is available for execution on the device\n{line}\n"
    assert "5090" not in triage(text, matrix).diagnosis[0].message
    assert "3090" not in triage(text, matrix).diagnosis[0].message


def test_another_packages_missing_kernels_are_that_package_s(matrix: Matrix) -> None:
    text = ("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
            "Card is a 1660S\nrunning with --precision full --no-half --xformers\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NO_KERNEL_IMAGE  # not "flash-attention does not run on it"
    said = _said(text, matrix)
    assert "flash-attn" not in said.replace("flash-attention", "")
    assert "reinstall xformers" in said
    assert ("TORCH_CUDA_ARCH_LIST=7.5 python -m pip install --no-build-isolation --no-deps --no-cache-dir "
            "--no-binary xformers xformers") in _commands(text, matrix)
    assert "Install torch" not in said  # every torch build has sm_75 code


def test_a_dashed_package_name_and_a_torch_for_blackwell(matrix: Matrix) -> None:
    text = ("No prebuilt wheels for sm_121 (GB10 / DGX Spark)\npip install causal-conv1d\n"
            "# RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    said = _said(text, matrix)
    assert "reinstall causal-conv1d" in said and "TORCH_CUDA_ARCH_LIST=12.1" in said
    assert "Install torch" in said  # torch builds before CUDA 12.8 have no sm_121 code


_XFORMERS = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
             "    PyTorch 1.13.1+cu117 with CUDA 1107 (you have 1.12.1+cu113)\n"
             "    Python  3.10.9 (you have 3.10.9)\n")


def test_a_package_built_for_another_torch_offers_that_torch(matrix: Matrix) -> None:
    top = triage(_XFORMERS, matrix).diagnosis[0]
    assert top.category == Category.TORCH_VERSION_MISMATCH
    commands = [c for r in top.remedies for c in r.commands]
    assert any(c.startswith("python -m pip install torch==1.13.1+cu117 --index-url ")
               for c in commands)
    assert "another Python environment" not in _said(_XFORMERS, matrix)  # nothing says so


def test_a_torch_installed_but_not_the_one_running_is_another_environment(matrix: Matrix) -> None:
    text = "I installed PyTorch 1.13.1+cu117 with pip, everything was successful, but:\n" + _XFORMERS
    top = triage(text, matrix).diagnosis[0]
    assert top.remedies[0].summary.startswith("The report says torch 1.13.1 was installed, yet the "
                                              "process runs torch 1.12.1+cu113")
    assert any(q.startswith("line 1: ") for q in top.evidence["quoted"])
