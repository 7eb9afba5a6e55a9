"""A cuDNN major missing, a stated compute-capability floor, C++17 headers gcc 7 lacks, an nvcc
option the build passes that this nvcc lacks, xFormers on a Mac and vLLM on Windows: each read
with its cause and the fix in its own remedy."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage


def _top(text: str, matrix: Matrix):  # type: ignore[no-untyped-def]
    found = triage(text, matrix).diagnosis
    assert found, text
    return found[0]


def _said(top) -> str:  # type: ignore[no-untyped-def]
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)


def test_a_cudnn8_library_with_cudnn9_installed_upgrades_the_owner(matrix: Matrix) -> None:
    text = ("faster-whisper fails\nCould not load library libcudnn_ops_infer.so.8. Error: "
            "libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory\n"
            "I have installed cudnn-9.2 from NVIDIA.\n")
    top = _top(text, matrix)
    assert top.category == Category.CUDA_RUNTIME_MISMATCH
    assert "cuDNN 8" in top.message and "cuDNN 9" in top.message
    assert "pip install \"ctranslate2>=4.5.0\"" in _said(top) and "libcudnn8" in _said(top)


def test_a_cudnn_library_alone_names_its_major_not_a_cuda_runtime(matrix: Matrix) -> None:
    text = ("ImportError: libcudnn.so.9: cannot open shared object file: No such file or "
            "directory\n")
    top = _top(text, matrix)
    assert top.category == Category.CUDA_RUNTIME_MISMATCH and "cuDNN 9" in top.message
    assert "libcudnn9" in _said(top)


@pytest.mark.parametrize("line, gpu, floor", [
    ("AssertionError: Device compute capability 8.9 or higher required for FP8 execution.",
     "RTX 3090", "8.9"),
    ("RuntimeError: this kernel requires compute capability >= 8.0", "Tesla T4", "8.0"),
])
def test_a_stated_capability_floor_above_the_gpu(line: str, gpu: str, floor: str,
                                                 matrix: Matrix) -> None:
    top = _top(f"GPU: NVIDIA {gpu}\n{line}\n", matrix)
    assert top.category == Category.GPU_UNSUPPORTED
    assert f"compute capability {floor} or higher" in top.message
    assert f"compute capability {floor} or newer" in _said(top)


def test_a_capability_floor_the_gpu_meets_is_not_the_cause(matrix: Matrix) -> None:
    text = ("GPU: NVIDIA H100\nAssertionError: Device compute capability 8.9 or higher "
            "required for FP8 execution.\n")
    assert not [d for d in triage(text, matrix).diagnosis if "or higher (" in d.message]


def test_gcc7_without_filesystem_is_an_old_compiler(matrix: Matrix) -> None:
    text = ("Failed building wheel for transformer-engine\n/tmp/pip-req-build-x/common/util/"
            "cuda_driver.cpp:8:10: fatal error: filesystem: No such file or directory\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_TOOLCHAIN and "too old" in top.message
    assert "CXX=g++-11" in _said(top)


def test_nvcc_unknown_option_from_flash_attn_281(matrix: Matrix) -> None:
    text = ("pip install flash-attn==2.8.1 --no-build-isolation\n"
            "nvcc fatal   : Unknown option '-compress-mode=size'\n")
    top = _top(text, matrix)
    assert top.category == Category.BUILD_TOOLCHAIN and "-compress-mode" in top.message
    assert "flash-attn>=2.8.2" in _said(top) and "#1751" in _said(top)


def test_nvcc_unknown_option_elsewhere_asks_for_a_newer_toolkit(matrix: Matrix) -> None:
    top = _top("building apex\nnvcc fatal   : Unknown option '--threads'\n", matrix)
    assert "newer CUDA toolkit whose nvcc knows --threads" in _said(top)
    assert "flash-attn" not in _said(top)


def test_xformers_on_a_mac(matrix: Matrix) -> None:
    top = _top("how to run on apple silicon?\nModuleNotFoundError: No module named 'xformers'\n",
               matrix)
    assert top.category == Category.PLATFORM_UNSUPPORTED and "xFormers" in top.message
    assert "sdpa" in _said(top)


def test_vllm_on_windows_but_not_under_wsl(matrix: Matrix) -> None:
    text = ("Bug: Windows installation\nI got this message when trying out vllm with windows; "
            "No CUDA runtime is found, using CUDA_HOME='C:\\CUDA\\v11.8'\n")
    top = _top(text, matrix)
    assert top.category == Category.PLATFORM_UNSUPPORTED and "Linux only" in top.message
    assert "WSL2" in _said(top)
    wsl = text + "This is under WSL2 Ubuntu.\n"
    assert not [d for d in triage(wsl, matrix).diagnosis if "Linux only" in d.message]


def test_a_package_whose_parts_differ_in_the_cxx11_abi(matrix: Matrix) -> None:
    text = ("/usr/local/lib/python3.10/dist-packages/transformer_engine_extensions.cpython-310-"
            "x86_64-linux-gnu.so: undefined symbol: _ZN18transformer_engine6getenvIiEET_RKSsRKS1_\n")
    top = _top(text, matrix)
    assert top.category == Category.CXX11_ABI_MISMATCH and "pre-C++11 std::string" in top.message
    assert "transformer-engine's parts" in top.message and "_GLIBCXX_USE_CXX11_ABI" in _said(top)


def test_flash_attn_on_a_radeon_under_rocm_takes_the_triton_backend(matrix: Matrix) -> None:
    top = _top("Cannot run it on ROCm on AMD 7800xt\nIt complains that module flash_attn_2_cuda "
               "is missing.\n", matrix)
    assert top.category == Category.ROCM and "AMD 7800xt" in top.message
    assert "FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE" in _said(top)


def test_a_pre_ampere_refusal_offers_sdpa(matrix: Matrix) -> None:
    top = _top("ValueError: Unsupported CUDA architecture: sm75\nRTX 2060 super 8gb\n", matrix)
    assert top.category == Category.GPU_UNSUPPORTED and "sdpa" in _said(top)
