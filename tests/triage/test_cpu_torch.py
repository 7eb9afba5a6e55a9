"""A CPU-only torch read from what packages and frameworks print: xFormers built for a CUDA
torch "(you have 2.1.2+cpu)", a framework finding no NVIDIA GPU on a machine that has one."""

from __future__ import annotations

from fadoctor.matrix import Matrix
from fadoctor.report import Category, Finding
from fadoctor.triage.diagnose import triage


def _said(finding: Finding) -> str:
    return " ".join(c for r in finding.remedies for c in [r.summary, *r.commands])


# each written for this test, in the words these tools print
def test_xformers_built_for_cuda_torch_next_to_a_cpu_torch(matrix: Matrix) -> None:
    text = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.1.2+cpu)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_CPU_ONLY
    assert "torch==2.1.2+cu121 --index-url" in _said(top) and top.remedies[0].commands[0].endswith(
        "/cu121")


def test_xformers_built_for_another_cuda_torch_is_still_a_mismatch(matrix: Matrix) -> None:
    text = ("xFormers was built for:\n"
            "    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.2.0+cu121)\n")
    assert triage(text, matrix).diagnosis[0].category == Category.TORCH_VERSION_MISMATCH


def test_no_gpu_found_on_a_machine_with_one_is_a_cpu_torch(matrix: Matrix) -> None:
    text = ('NotImplementedError: Unsloth: No NVIDIA GPU found? Unsloth currently only supports '
            'GPUs!\nI have an RTX 4060 Ti with brand new drivers.\n')
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.TORCH_CPU_ONLY
    assert "--index-url" in _said(top) and "525.60.13" in _said(top)


def test_no_gpu_found_alone_is_not_read_as_a_cpu_torch(matrix: Matrix) -> None:
    text = "NotImplementedError: Unsloth: No NVIDIA GPU found? Unsloth currently only supports GPUs!\n"
    assert all(d.category != Category.TORCH_CPU_ONLY for d in triage(text, matrix).diagnosis)


def test_no_gpu_found_behind_a_driver_too_old_is_the_driver(matrix: Matrix) -> None:
    text = ("UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found "
            "version 11080).\nNotImplementedError: Unsloth: No NVIDIA GPU found? Unsloth currently "
            "only supports GPUs!\nGPU: RTX 3090\n")
    assert triage(text, matrix).diagnosis[0].category == Category.DRIVER_TOO_OLD
