"""Mechanisms read from the development half of held_out_13, each written from its upstream
source: a build that brought the machine down (parallel nvcc jobs), pip's isolated build said in
prose beside "No module named 'torch'", a torch header the source needs and this torch lacks,
wrong values from kernels compiled with a CUDA below the floor later releases set, and the
remote-code warnings of models that import flash-attention's separately built parts."""

from __future__ import annotations

import pytest

from fadoctor.matrix import Matrix
from fadoctor.report import Category, Severity
from fadoctor.triage.diagnose import triage


def _said(text: str, matrix: Matrix) -> str:
    top = triage(text, matrix).diagnosis[0]
    return " ".join(f"{r.summary} {' '.join(r.commands)}" for r in top.remedies)


def test_a_build_that_crashes_the_machine_is_memory(matrix: Matrix) -> None:
    text = ("With 128GB of RAM the build crashes the whole system every time I build it from "
            "source with pip install flash-attn.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_RESOURCES
    assert "MAX_JOBS=" in _said(text, matrix)


def test_a_crash_that_is_not_a_build_is_not_memory(matrix: Matrix) -> None:
    text = "Training crashes the whole system after an hour.\n"
    assert not any(d.category == Category.BUILD_RESOURCES
                   for d in triage(text, matrix).diagnosis)


@pytest.mark.parametrize("install", ["pip install flash-attn", "uv add causal-conv1d",
                                     "pip3 install mamba-ssm==2.2.2"])
def test_no_torch_beside_an_install_is_isolation(install: str, matrix: Matrix) -> None:
    text = f"No Module Named 'torch'\n\nWhen I run {install}, it says that. See screenshot.\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.BUILD_ISOLATION
    assert "--no-build-isolation" in _said(text, matrix)


def test_no_torch_while_running_is_not_isolation(matrix: Matrix) -> None:
    text = "python train.py\nModuleNotFoundError: No module named 'torchvision'\n"
    assert not any(d.category == Category.BUILD_ISOLATION for d in triage(text, matrix).diagnosis)


def test_a_torch_header_the_source_needs(matrix: Matrix) -> None:
    text = ("csrc/ln_fwd_kernels.cuh:9:10: fatal error: ATen/cuda/detail/UnpackRaw.cuh: No such "
            "file or directory\ncompilation terminated.\ntorch 1.10.1\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT
    assert "ATen/cuda/detail/UnpackRaw.cuh" in top.message and "1.10.1" in top.message
    assert "Upgrade torch" in _said(text, matrix)


def test_wrong_values_from_an_old_toolkit(matrix: Matrix) -> None:
    text = ("I test flash-attention 2.0.9 with CUDA 11.4 and got the wrong answer when "
            "Headdim>=160.\nFAILED tests/test_flash_attn.py::test_flash_attn_qkvpacked[0.0-97-160-"
            "False-dtype0] - AssertionError: assert 280.0 <= (2 * 0.001953125)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NUMERICS
    first = top.remedies[0].summary
    assert first.startswith("The kernels were compiled with CUDA 11.4") and "nvcc 11.6" in first


def test_wrong_values_with_a_current_toolkit_keep_the_usual_steps(matrix: Matrix) -> None:
    text = "flash-attn 2.8.3 with CUDA 12.8 gives wrong results in the backward pass\n"
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NUMERICS
    assert not any("compiled with CUDA" in r.summary for r in top.remedies)


@pytest.mark.parametrize("part, folder", [("rotary", "csrc/rotary"),
                                          ("rms_norm", "csrc/layer_norm")])
def test_remote_code_warns_of_separately_built_parts(part: str, folder: str,
                                                     matrix: Matrix) -> None:
    text = (f"Warning: import flash_attn {part} fail, please install FlashAttention to get "
            "higher efficiency\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED and top.severity == Severity.WARNING
    assert folder in _said(text, matrix)


_NOT_COMPILED = ("UserWarning: 1Torch was not compiled with flash attention. (Triggered internally "
                 "at C:\\actions-runner\\_work\\pytorch\\pytorch\\builder\\windows\\pytorch\\aten\\"
                 "src\\ATen\\native\\transformers\\cuda\\sdp_utils.cpp:263.)\n")


def test_torch_without_sdpa_flash_is_a_harmless_warning(matrix: Matrix) -> None:
    top = triage(_NOT_COMPILED + "I am on Windows with a 4070\n", matrix).diagnosis[0]
    assert top.category == Category.PLATFORM_UNSUPPORTED and top.severity == Severity.INFO
    assert "Windows wheels" in top.message
    assert "safe to ignore" in top.remedies[0].summary


def test_a_real_error_beside_the_warning_comes_first(matrix: Matrix) -> None:
    text = _NOT_COMPILED + ("ImportError: /x/site-packages/flash_attn_2_cuda.cpython-310-x86_64-"
                            "linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    assert triage(text, matrix).diagnosis[0].category == Category.TORCH_VERSION_MISMATCH


def test_a_failed_flash_attn_build_on_a_v100_is_the_gpu(matrix: Matrix) -> None:
    text = ("I cannot install flash-attention:\n  error: subprocess-exited-with-error\n"
            "  ERROR: Failed building wheel for flash-attn\nFailed to build flash-attn\n"
            "My GPU is a V100 32G; without flash-attention the model runs fine\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.GPU_UNSUPPORTED and "V100" in top.message
    assert "sdpa" in _said(text, matrix)


def test_a_real_compile_error_on_a_v100_stays_the_compile_error(matrix: Matrix) -> None:
    text = ("My GPU is a V100 and pip install flash-attn fails:\n"
            "csrc/flash_api.cpp:12:10: fatal error: cuda_runtime_api.h: No such file or directory\n"
            "ERROR: Failed building wheel for flash-attn\n")
    assert triage(text, matrix).diagnosis[0].category == Category.BUILD_TOOLCHAIN


def test_te_s_bound_retold_in_prose(matrix: Matrix) -> None:
    text = ("transformer_engine fails in fused_attn_fwd on my RTX 4090. I have Flash Attention "
            "2.7.3, could this be the issue (there is a warning that says that 2.6.3. is the latest "
            "supported)?\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.VERSION_CONFLICT and "<= 2.6.3" in top.message
    assert "flash-attn==2.6.3" in _said(text, matrix)


def test_a_retold_bound_the_installed_flash_attn_meets_is_not_a_conflict(matrix: Matrix) -> None:
    text = ("transformer_engine with flash-attn 2.6.0; the docs say 2.6.3 is the latest "
            "supported\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert not any(d.category == Category.VERSION_CONFLICT for d in triage(text, matrix).diagnosis)


def test_uv_finds_no_wheel_for_this_python(matrix: Matrix) -> None:
    text = ("  x No solution found when resolving dependencies:\n"
            "  ╰─▶ Because flashinfer==0.1.2+cu121torch2.3 has no wheels with a matching Python ABI "
            "tag (e.g., `cp312`) and you require flashinfer, we can conclude that your "
            "requirements are unsatisfiable.\n\n      hint: You require CPython 3.12 (`cp312`), but "
            "we only found wheels for `flashinfer` (v0.1.2) with the following Python ABI tags: "
            "`cp38`, `cp39`, `cp310`, `cp311`\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.WRONG_WHEEL and "cp312" in top.message
    assert [c for r in top.remedies for c in r.commands] == ["uv venv --python 3.11"]


def test_uv_finds_no_wheel_for_this_platform(matrix: Matrix) -> None:
    text = ("  ╰─▶ Because flash-attn==2.8.3 has no wheels with a matching platform tag (e.g., "
            "`macosx_14_0_arm64`) and you require flash-attn, we can conclude that your "
            "requirements are unsatisfiable.\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.PLATFORM_UNSUPPORTED and "macosx_14_0_arm64" in top.message


def test_installing_flash_attn_on_windows(matrix: Matrix) -> None:
    text = ("I run the workflow on Windows and get an Error (screenshot).\n"
            "pip install flash-attn --no-build-isolation\nget this Error: (screenshot)\n")
    top = triage(text, matrix).diagnosis[0]
    assert top.category == Category.PLATFORM_UNSUPPORTED
    assert "sdpa" in _said(text, matrix) and "WSL2" in _said(text, matrix)


def test_installing_flash_attn_on_linux_is_not_windows(matrix: Matrix) -> None:
    text = "pip install flash-attn --no-build-isolation\nget this Error: (screenshot)\nUbuntu 22.04\n"
    assert not any(d.category == Category.PLATFORM_UNSUPPORTED
                   for d in triage(text, matrix).diagnosis)


_CHECK = ("ImportError: This modeling file requires the following packages that were not found in "
          "your environment: flash_attn. Run `pip install flash_attn`\n")


def test_remote_code_check_on_an_old_transformers(matrix: Matrix) -> None:
    top = triage(_CHECK + "transformers 4.26.1\n", matrix).diagnosis[0]
    assert top.category == Category.NOT_INSTALLED
    assert "from 4.27.0 it skips imports inside try/except" in top.remedies[0].summary
    assert top.remedies[0].commands == ["python -m pip install --upgrade transformers"]


def test_remote_code_check_on_a_new_transformers_installs_flash_attn(matrix: Matrix) -> None:
    top = triage(_CHECK + "transformers 4.46.0\n", matrix).diagnosis[0]
    assert "4.27.0" not in top.remedies[0].summary
    assert any("4.27.0" in r.summary for r in top.remedies)  # still offered, last
